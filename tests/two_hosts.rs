//! Two hosts (network namespaces joined by a veth pair, made by each test): UDP loss under
//! an nftables drop, host names resolved over IPv4 and IPv6, and a short outage reported
//! as a stall.

use std::time::Duration;

use crate::netns::TwoHosts;
use crate::util::{Launch, Output, Ports, port, ports_in};

#[test]
fn udp_loss_under_a_five_percent_random_drop_ipv4_and_ipv6() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("ud", 8) else {
        return;
    };
    h.add_ipv6("fd00:201:8");
    // As on a NIC without UDP segmentation offload, the sender's kernel cuts its GSO
    // sends into datagrams before the wire, so the drop rule sees each datagram (veth
    // would otherwise carry a whole 44-datagram send as one packet).
    h.exec(
        &h.a,
        &format!("ethtool -K {} tx-udp-segmentation off", h.dev_a),
    );
    h.drop_udp_in_b(5);
    // (receiver address, family flag, port, datagram size the 1500-byte veth MTU allows,
    // the sender's -a source address as the receiver sees it)
    let cases = [
        (h.ip_b.clone(), "", port(1), 1500 - 28, h.ip_a.clone()),
        (
            "fd00:201:8::2".to_string(),
            "-6",
            port(11),
            1500 - 48,
            "fd00:201:8::1".to_string(),
        ),
    ];
    for (addr, family, port, size, source) in cases {
        let common = format!("-u {family} -P 2 -p {port} -t 3 --format json");
        let r = Launch::new("receiver", &format!("-r {addr} {common} --recv-buffer 4M"))
            .in_netns(&h.b)
            .spawn();
        let s = Launch::new("sender", &format!("-s {addr} {common} -B 100M -a {source}"))
            .in_netns(&h.a)
            .spawn();
        let so = s.wait(Duration::from_secs(30));
        let ro = r.wait(Duration::from_secs(30));
        assert_eq!((so.code(), ro.code()), (Some(0), Some(0)), "{so:?}\n{ro:?}");
        let doc =
            |o: &Output| -> serde_json::Value { serde_json::from_str(&o.stdout).expect("JSON") };
        let (sd, rd) = (doc(&so), doc(&ro));
        assert_eq!(
            sd["reports"][0]["buffer_len"], size,
            "datagrams fit the path"
        );
        // -P 2 ports x 4 threads: eight flows, all from the -a address.
        let peers = rd["reports"][0]["peers"].as_array().unwrap();
        let seen = if family.is_empty() {
            format!("{source}:")
        } else {
            format!("[{source}]:")
        };
        assert!(
            peers.len() == 8 && peers.iter().all(|p| p.as_str().unwrap().starts_with(&seen)),
            "-a {source}: {peers:?}"
        );
        let udp = &rd["reports"][0]["udp"];
        let expected = udp["expected"].as_u64().unwrap();
        // 100 Mbit/s of ~1.5 KB datagrams for 3 s: about 25,000; the binomial spread of
        // a 5 % loss over that many is about 0.14 points.
        assert!(expected > 10_000, "{udp}");
        let loss = udp["loss_percent"].as_f64().unwrap();
        eprintln!(
            "UDP {family} 5% drop: measured loss {loss:.2}% of {expected} datagrams, jitter {} ms",
            udp["jitter_ms"]
        );
        assert!(
            (loss - 5.0).abs() <= 1.5,
            "loss {loss}% for a 5% drop rule: {udp}"
        );
        assert_eq!(udp["duplicates"], 0, "{udp}");
    }
}

#[test]
fn sender_resolves_host_names_over_ipv4_and_ipv6() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("hn", 9) else {
        return;
    };
    h.add_ipv6("fd00:201:9");
    // The sender's host knows the receiver by name, with an address of each family.
    h.hosts_file(
        &h.a,
        &format!("{} rx.ntttcp.test\nfd00:201:9::2 rx.ntttcp.test\n", h.ip_b),
    );
    let cases = [
        (
            "-s rx.ntttcp.test",
            h.ip_b.as_str(),
            "",
            port(1),
            format!("{}:", h.ip_a),
        ),
        (
            "-s rx.ntttcp.test",
            "fd00:201:9::2",
            "-6",
            port(11),
            "[fd00:201:9::1]:".into(),
        ),
        (
            "-s -m 1,*,rx.ntttcp.test",
            h.ip_b.as_str(),
            "",
            port(21),
            format!("{}:", h.ip_a),
        ),
    ];
    for (target, listen, family, port, peer) in cases {
        let common = format!("{family} -P 1 -p {port} -t 1 --format json");
        let r = Launch::new("receiver", &format!("-r {listen} {common}"))
            .in_netns(&h.b)
            .spawn();
        let s = Launch::new("sender", &format!("{target} {common}"))
            .in_netns(&h.a)
            .spawn();
        let so = s.wait(Duration::from_secs(30));
        let ro = r.wait(Duration::from_secs(30));
        assert_eq!(
            (so.code(), ro.code()),
            (Some(0), Some(0)),
            "{target} {family}: {so:?}\n{ro:?}"
        );
        let rd: serde_json::Value = serde_json::from_str(&ro.stdout).expect("JSON");
        let peers = rd["reports"][0]["peers"].as_array().unwrap();
        assert!(
            !peers.is_empty() && peers.iter().all(|p| p.as_str().unwrap().starts_with(&peer)),
            "{target} {family}: {peers:?}"
        );
        assert!(rd["reports"][0]["totals"]["bytes"].as_u64().unwrap() > 0);
    }
    // A name nobody knows: one line naming it, at once, and a usage error (exit 2) as a
    // receiver address that is not one of the host's own is.
    let o = Launch::new("sender", "-s nosuch.ntttcp.invalid -P 1 -p @31 -t 1")
        .in_netns(&h.a)
        .spawn()
        .wait(Duration::from_secs(20));
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(
        o.stderr
            .contains("cannot resolve receiver address 'nosuch.ntttcp.invalid'"),
        "{}",
        o.stderr
    );
}

/// A path dead for 2 s, well inside --timeout: the test completes, but each side reports
/// the stall (JSON `longest_stall_s`, a warning), and `--max-stall 1` makes it exit 1.
#[test]
fn a_short_outage_is_reported_as_a_stall() {
    let _ports = Ports::take(1);
    let Some(h) = TwoHosts::new("st", 10) else {
        return;
    };
    let m = ports_in(&format!("-m 1,*,{} -p @1 -t 8", h.ip_b));
    let r = Launch::new("receiver", &format!("-r {m} --format json --max-stall 1"))
        .in_netns(&h.b)
        .spawn();
    crate::util::wait_listening_in(&h.b, port(0), Duration::from_secs(20));
    let s = Launch::new("sender", &format!("-s {m} --interval 0.2"))
        .in_netns(&h.a)
        .spawn();
    s.wait_for_stdout("Gbit/s", Duration::from_secs(20));
    h.exec(&h.a, &format!("ip link set {} down", h.dev_a));
    // The outage itself lasts two seconds (the scenario, not a wait for a state).
    std::thread::sleep(Duration::from_secs(2));
    h.exec(&h.a, &format!("ip link set {} up", h.dev_a));
    let so = s.wait(Duration::from_secs(30));
    let ro = r.wait(Duration::from_secs(30));
    assert_eq!(so.code(), Some(0), "no --max-stall on the sender: {so:?}");
    assert!(
        so.stderr.contains("test disturbed: no data moved for"),
        "{}",
        so.stderr
    );
    assert_eq!(ro.code(), Some(1), "--max-stall 1: {ro:?}");
    let doc: serde_json::Value = serde_json::from_str(&ro.stdout).expect("JSON");
    let rep = &doc["reports"][0];
    let stall = rep["longest_stall_s"].as_f64().unwrap();
    let from = rep["longest_stall_from_s"].as_f64().unwrap();
    eprintln!("FAULT 2 s outage: receiver stall {stall:.1} s from {from:.1} s");
    assert!((1.5..7.0).contains(&stall), "{rep}");
    assert!(from > 0.0 && from < 6.0, "{rep}");
    assert_eq!(rep["end"]["kind"], "completed", "{rep}");
}
