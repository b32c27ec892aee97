//! Two network namespaces joined by a veth pair, for `echo-bench --netns`: the server in one,
//! the client in the other, so that the echo crosses a (virtual) device instead of loopback.
//!
//! The namespaces are named after this process (`slecho-s-PID`, `slecho-c-PID`) and are removed
//! on drop — on success, on error, on panic and after Ctrl-C (the caller stops its loop and
//! drops the pair). Namespaces left by a process that was killed with SIGKILL are removed by the
//! next [`NetnsPair::create`]. The addresses come from 192.0.2.0/24 (TEST-NET-1, documentation
//! only, never routed) and exist only inside the two namespaces.

use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

use crate::EchoError;

const PREFIX: &str = "slecho-";
/// The server's address inside its namespace.
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
/// The client's address inside its namespace.
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

/// Which side of the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Server,
    Client,
}

/// The two namespaces; removed on drop.
#[derive(Debug)]
pub struct NetnsPair {
    server: String,
    client: String,
    created: Vec<String>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("cannot run `ip` ({e}); install iproute2"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`ip {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Path of a named namespace.
pub fn ns_path(name: &str) -> std::path::PathBuf {
    Path::new("/var/run/netns").join(name)
}

/// Names of this program's namespaces that currently exist.
pub fn existing() -> Vec<String> {
    std::fs::read_dir("/var/run/netns")
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with(PREFIX)).collect())
        .unwrap_or_default()
}

fn remove_stale() {
    for n in existing() {
        let pid = n.rsplit('-').next().and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                eprintln!("removing namespace {n} left by a killed run (pid {pid})");
                let _ = ip(&["netns", "del", &n]);
            }
        }
    }
}

impl NetnsPair {
    /// Creates both namespaces, the veth pair and the addresses. Needs root.
    pub fn create() -> Result<NetnsPair, EchoError> {
        let unsupported = |reason: String| EchoError::Unsupported { what: "network namespaces with a veth pair", reason };
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(unsupported("creating namespaces needs root: run with sudo, or drop --netns".into()));
        }
        remove_stale();
        let pid = std::process::id();
        let mut pair = NetnsPair { server: format!("{PREFIX}s-{pid}"), client: format!("{PREFIX}c-{pid}"), created: Vec::new() };
        let (va, vb) = (format!("slv{}a", pid % 1_000_000), format!("slv{}b", pid % 1_000_000));
        let (s, c) = (pair.server.clone(), pair.client.clone());
        for ns in [&s, &c] {
            ip(&["netns", "add", ns]).map_err(unsupported)?;
            pair.created.push(ns.clone());
        }
        let steps: Vec<Vec<String>> = vec![
            vec!["link", "add", &va, "netns", &s, "type", "veth", "peer", "name", &vb, "netns", &c],
            vec!["-n", &s, "addr", "add", &format!("{SERVER_IP}/24"), "dev", &va],
            vec!["-n", &c, "addr", "add", &format!("{CLIENT_IP}/24"), "dev", &vb],
            vec!["-n", &s, "link", "set", "lo", "up"],
            vec!["-n", &c, "link", "set", "lo", "up"],
            vec!["-n", &s, "link", "set", &va, "up"],
            vec!["-n", &c, "link", "set", &vb, "up"],
        ]
        .into_iter()
        .map(|v| v.into_iter().map(String::from).collect())
        .collect();
        for st in steps {
            let args: Vec<&str> = st.iter().map(String::as_str).collect();
            ip(&args).map_err(unsupported)?;
        }
        Ok(pair)
    }

    /// The namespace name of a side.
    pub fn name(&self, side: Side) -> &str {
        match side {
            Side::Server => &self.server,
            Side::Client => &self.client,
        }
    }

    /// Moves the calling thread into the namespace of `side` (threads it spawns follow; sockets
    /// it creates belong there for their whole life).
    pub fn enter(&self, side: Side) -> io::Result<()> {
        let f = File::open(ns_path(self.name(side)))?;
        // SAFETY: setns on an fd we hold open; it affects only the calling thread.
        let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
        crate::sys::cvt(r as libc::c_long).map(|_| ())
    }

    /// Deletes both namespaces (and with them the veth pair); reports what could not be removed.
    pub fn remove(&mut self) -> Result<(), String> {
        let mut errs = Vec::new();
        for ns in std::mem::take(&mut self.created) {
            if let Err(e) = ip(&["netns", "del", &ns]) {
                errs.push(e);
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            eprintln!("warning: {e}");
        }
    }
}
