//! Renders the SVG charts to PNG with `resvg`, using the system's fonts (Debian:
//! `fonts-dejavu-core`).

use std::path::Path;

use resvg::{tiny_skia, usvg};

/// What the rendering found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub width: u32,
    pub height: u32,
    /// Font faces found on the system; 0 means the PNG has no text.
    pub font_faces: usize,
}

/// Renders `svg` and writes it to `path` as PNG.
pub fn svg_to_png(svg: &str, path: &Path) -> Result<Rendered, String> {
    let mut opt = usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let font_faces = opt.fontdb.len();
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| format!("cannot parse the chart SVG: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("chart has zero size")?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.save_png(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Rendered { width: size.width(), height: size.height(), font_faces })
}

#[cfg(test)]
mod tests {
    #[test]
    fn renders_a_png() {
        let dir = std::env::temp_dir().join(format!("slecho-png-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.png");
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" fill="red"/><text x="2" y="15">hi</text></svg>"#;
        let r = super::svg_to_png(svg, &p).unwrap();
        assert_eq!((r.width, r.height), (40, 20));
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        std::fs::remove_dir_all(&dir).unwrap();
        if r.font_faces == 0 {
            schedlab_report::skip!("no system fonts (install fonts-dejavu-core); text is not rendered");
        }
    }
}
