//! What the timeline reports as it goes.

use super::*;
use crate::data::WorkerState;
use std::sync::{Arc, Mutex};

struct Quiet;

impl Monitor for Quiet {
    async fn next(&mut self, _phase: Phase) -> Event {
        std::future::pending().await
    }
}

#[test]
fn intervals_and_phase_changes_are_reported_in_order() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let seen = Mutex::new(Vec::new());
    let record = |p: Progress| seen.lock().unwrap().push(p);
    let plan = Plan {
        warmup: Duration::from_millis(50),
        measure: Some(Duration::from_millis(350)),
        cycle: Some(Duration::from_millis(500)),
        interval: Some(Duration::from_millis(100)),
    };
    let workers = vec![Arc::new(WorkerState::default())];
    rt.block_on(run(
        Start::At(Instant::now()),
        plan,
        &Directions::one(crate::config::Direction::Send, &workers),
        None,
        &mut Quiet,
        &record,
    ));
    let seen = seen.into_inner().unwrap();
    let names: Vec<&str> = seen
        .iter()
        .map(|p| match p {
            Progress::WarmupDone => "warmup",
            Progress::Interval(_) => "interval",
            Progress::RunDone => "run",
            Progress::CooldownStarted => "cooldown",
            Progress::CycleDone => "cycle",
        })
        .collect();
    // 350 ms in 100 ms intervals: three whole ones and the last 50 ms.
    assert_eq!(
        names,
        [
            "warmup", "interval", "interval", "interval", "interval", "run", "cooldown", "cycle"
        ]
    );
    let Progress::Interval(last) = &seen[4] else {
        unreachable!()
    };
    assert!(
        (0.02..0.09).contains(&(last.end_s - last.start_s)),
        "{last:?}"
    );
    let Progress::Interval(first) = &seen[1] else {
        unreachable!()
    };
    assert!(
        (0.09..0.2).contains(&first.end_s) && first.start_s == 0.0,
        "{first:?}"
    );
    assert_eq!(first.thread_bytes, vec![0]);
    assert_eq!(first.planned_s, Some(0.35));
    assert_eq!(first.udp_loss, None, "nothing stamped was expected");
}

#[test]
fn the_longest_span_without_bytes_is_kept() {
    let m0 = Instant::now();
    let at = |ms: u64| m0 + Duration::from_millis(ms);
    let mut w = StallWatch::new(m0, 0);
    w.look(at(100), 10);
    w.look(at(200), 20);
    // Dead from 200 ms (the last move) to 2300 ms, then moving again.
    for ms in (300..=2300).step_by(100) {
        w.look(at(ms), 20);
    }
    w.look(at(2400), 30);
    assert_eq!(w.longest.from_s, 0.2);
    assert!((w.longest.seconds - 2.1).abs() < 1e-9, "{:?}", w.longest);
    // A shorter stall later does not replace it; one running to the end counts.
    w.look(at(3000), 30);
    assert!((w.longest.seconds - 2.1).abs() < 1e-9);
    w.look(at(5000), 30);
    assert_eq!((w.longest.from_s, w.longest.seconds), (2.4, 2.6));
}

#[test]
fn interval_loss_from_two_samples() {
    let at = |expected, received| Sample {
        udp: crate::data::udp_accounting::Tally {
            expected,
            received,
            ..Default::default()
        },
        ..Default::default()
    };
    let l = IntervalLoss::between(&[at(100, 90), at(0, 0)], &[at(300, 280), at(50, 50)]).unwrap();
    assert_eq!((l.expected, l.lost), (250, 10));
    assert_eq!(IntervalLoss::between(&[at(5, 5)], &[at(5, 5)]), None);
}
