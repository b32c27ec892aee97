//! A writer for the `newc` cpio format (the one the Linux kernel unpacks as an initramfs).
//!
//! Only what an initramfs needs: directories, regular files and their modes; every entry is owned
//! by root. Format: a 110-byte ASCII header (`070701` and thirteen 8-digit hex fields), the NUL
//! terminated name padded to 4 bytes, the data padded to 4 bytes; a `TRAILER!!!` entry ends it.

use std::io::{self, Write};

/// One entry of the archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A directory (mode 0755).
    Dir(String),
    /// A regular file with its permission bits (e.g. 0o755) and contents.
    File { name: String, mode: u32, data: Vec<u8> },
}

/// Writes `entries` (in order, parents before children) and the trailer to `w`.
pub fn write_archive<W: Write>(w: &mut W, entries: &[Entry]) -> io::Result<()> {
    for (ino, e) in (1u32..).zip(entries) {
        match e {
            Entry::Dir(name) => header(w, ino, 0o040_755, 2, name, &[])?,
            Entry::File { name, mode, data } => header(w, ino, 0o100_000 | (mode & 0o7777), 1, name, data)?,
        }
    }
    header(w, 0, 0, 1, "TRAILER!!!", &[])
}

fn header<W: Write>(w: &mut W, ino: u32, mode: u32, nlink: u32, name: &str, data: &[u8]) -> io::Result<()> {
    let size = u32::try_from(data.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{name}: larger than 4 GiB")))?;
    let namesize = name.len() as u32 + 1;
    // ino mode uid gid nlink mtime filesize devmajor devminor rdevmajor rdevminor namesize check
    let fields = [ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, namesize, 0];
    let mut h = String::with_capacity(110);
    h.push_str("070701");
    for f in fields {
        h.push_str(&format!("{f:08x}"));
    }
    w.write_all(h.as_bytes())?;
    w.write_all(name.as_bytes())?;
    w.write_all(&[0])?;
    pad(w, 110 + namesize as usize)?;
    w.write_all(data)?;
    pad(w, data.len())
}

fn pad<W: Write>(w: &mut W, len: usize) -> io::Result<()> {
    let n = (4 - len % 4) % 4;
    w.write_all(&[0u8; 3][..n])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_data_are_aligned_to_four_bytes() {
        let mut out = Vec::new();
        let entries = [Entry::Dir("bin".into()), Entry::File { name: "init".into(), mode: 0o755, data: b"#!/x\n".to_vec() }];
        write_archive(&mut out, &entries).unwrap();
        assert_eq!(&out[..6], b"070701");
        // header 110 + "bin\0" = 114 -> padded to 116
        assert_eq!(&out[110..114], b"bin\0");
        assert_eq!(&out[116..122], b"070701");
        // second entry: mode field (2nd) is a regular file 0100755
        assert_eq!(&out[116 + 14..116 + 22], b"000081ed");
        // its size field (7th) is 5
        assert_eq!(&out[116 + 54..116 + 62], b"00000005");
        let name_end = 116 + 110 + 5; // "init\0"
        let data_start = name_end + (4 - name_end % 4) % 4;
        assert_eq!(&out[data_start..data_start + 5], b"#!/x\n");
        let tail = String::from_utf8_lossy(&out[out.len() - 16..]).into_owned();
        assert!(tail.contains("TRAILER!!!"), "{tail:?}");
        assert_eq!(out.len() % 4, 0);
    }
}
