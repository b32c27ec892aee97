//! A bad named-workload spec (`dist:NAME[:READING[:BYTES_PER_PACKET]]`, `lengths = [...]`)
//! is refused with a message that names what is wrong.

use schedlab_workload::Reading;

/// Error texts say what is wrong: a negative or huge bytes per packet is out of range (it is a
/// whole number), an unknown name lists the names, a bad reading names the choices.
#[test]
fn bad_named_specs_say_what_is_wrong() {
    use schedlab_workload::parse_named;
    for bad in ["w3:step:-1", "w3:step:99999999999999999999", "w3:step:0", "w3:step:1000001"] {
        let e = parse_named(bad).unwrap_err().to_string();
        assert!(e.contains("between 1 and 1000000"), "{bad}: {e}");
        assert!(!e.contains("is not a whole number"), "{bad}: {e}");
    }
    let e = parse_named("w3:step:x").unwrap_err().to_string();
    assert!(e.contains("'x'") && e.contains("whole number"), "{e}");
    let e = parse_named("w9").unwrap_err().to_string();
    assert!(e.contains("'w9'") && e.contains("pfabric-datamining"), "{e}");
    let e = parse_named("w3:smooth").unwrap_err().to_string();
    assert!(e.contains("'smooth'") && e.contains("step or interp"), "{e}");
    assert_eq!(parse_named(" w3 : interp : 1442 ").map(|(w, r, b)| (w.name, r, b)), Ok(("w3", Reading::Interpolated, 1442)));
}
