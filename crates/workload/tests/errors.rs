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

/// A bytes-per-packet value only cuts byte tables into packets: given for a table in packets
/// (W5, pFabric) it is refused with the value and the workload named, never silently dropped;
/// a byte table still takes it, and a packet table without one still parses.
#[test]
fn bytes_per_packet_on_a_packet_table_is_refused() {
    use schedlab_workload::{named, parse_named, WorkloadError, DEFAULT_BYTES_PER_PACKET};
    for (spec, name, value) in [
        ("w5:step:1442", "w5", "1442"),
        ("W5::1460", "w5", "1460"),
        ("pfabric-websearch:interp:1442", "pfabric-websearch", "1442"),
        ("datamining:step: 1500 ", "pfabric-datamining", "1500"),
        ("w5:step:0", "w5", "0"),
    ] {
        let e = parse_named(spec).unwrap_err();
        assert_eq!(e, WorkloadError::BytesPerPacketOnPackets { name: name.into(), value: value.into() }, "{spec}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{name} is measured in packets, so bytes per packet {value} does not apply: drop it")),
            "{spec}: {text}"
        );
        assert!(text.contains("w1, w2, w3, w4, w1-sampled"), "{spec}: {text}");
    }
    assert_eq!(
        parse_named("w5:interp").map(|(w, r, b)| (w.name, r, b)),
        Ok(("w5", Reading::Interpolated, DEFAULT_BYTES_PER_PACKET))
    );
    assert_eq!(parse_named("w1-sampled:step:1442").map(|(w, _, b)| (w.name, b)), Ok(("w1-sampled", 1442)));

    // The same rule for a value given as a number (`sim --bytes-per-packet`).
    let w5 = named("w5").unwrap();
    assert_eq!(w5.bytes_per_packet(None), Ok(DEFAULT_BYTES_PER_PACKET));
    assert_eq!(
        w5.bytes_per_packet(Some(1442)),
        Err(WorkloadError::BytesPerPacketOnPackets { name: "w5".into(), value: "1442".into() })
    );
    let w2 = named("w2").unwrap();
    assert_eq!(w2.bytes_per_packet(Some(1442)), Ok(1442));
    assert_eq!(w2.bytes_per_packet(None), Ok(DEFAULT_BYTES_PER_PACKET));
    assert_eq!(w2.bytes_per_packet(Some(0)), Err(WorkloadError::BytesPerPacket(0)));
}
