//! The timeline's phases, events and edges, scripted.

use super::*;
use crate::config::Phases;

/// Delivers scripted events at fixed offsets from its creation.
struct Script {
    t0: Instant,
    events: Vec<(u64, Event)>,
}

impl Monitor for Script {
    async fn next(&mut self, _phase: Phase) -> Event {
        match self.events.first().cloned() {
            Some((ms, ev)) => {
                tokio::time::sleep_until((self.t0 + Duration::from_millis(ms)).into()).await;
                // Only reached when not cancelled: the event is consumed exactly once.
                self.events.remove(0);
                ev
            }
            None => std::future::pending().await,
        }
    }
}

fn plan(warmup: u64, measure: Option<u64>, cycle: Option<u64>) -> Plan {
    Plan {
        warmup: Duration::from_millis(warmup),
        measure: measure.map(Duration::from_millis),
        cycle: cycle.map(Duration::from_millis),
        interval: None,
    }
}

fn run_script(p: Plan, events: Vec<(u64, Event)>) -> (Window, Duration) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let t0 = Instant::now();
        let mut s = Script { t0, events };
        let w = run(Start::At(t0), p, &none(), None, &mut s, &|_| {}).await;
        (w, t0.elapsed())
    })
}

#[test]
fn plans_within_a_negotiated_cycle() {
    let tl = Phases {
        warmup: 1,
        duration: 10,
        cooldown: 2,
    };
    let s = Duration::from_secs;
    let p = Plan::within(tl, 13, false);
    assert_eq!(
        (p.warmup, p.measure, p.cycle),
        (s(1), Some(s(10)), Some(s(13)))
    );
    assert_eq!(Plan::within(tl, 60, true).measure, Some(s(10)));
    // A stock multi-client receiver may impose a shorter cycle.
    assert_eq!(Plan::within(tl, 8, false).measure, Some(s(7)));
    assert_eq!(Plan::within(tl, 8, true).measure, Some(s(5)));
    let c = Plan::within(tl, 0, true);
    assert_eq!((c.measure, c.cycle), (None, None));
}

#[test]
fn phases_run_to_their_timers() {
    let (w, took) = run_script(plan(50, Some(200), Some(400)), vec![]);
    assert_eq!(w.ended, End::Completed);
    assert!(
        took >= Duration::from_millis(400),
        "cool-down waited: {took:?}"
    );
    // Never short; long by at most what this runtime's own timers ran late over the
    // whole cycle (a starved machine delays both alike), and 150 ms of edges besides.
    let late = took.as_secs_f64() - 0.4;
    assert!(w.seconds >= 0.19, "{}", w.seconds);
    assert!(
        w.seconds <= 0.35 + late,
        "{} with timers {late:.3} s late",
        w.seconds
    );
}

#[test]
fn a_late_starter_whose_peer_ends_on_plan_completes() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let w = rt.block_on(async {
        // The clock started 1 s ago (a starved process got here late); the peer
        // closes when the planned 2 s are over, 1 s into our own window.
        let now = Instant::now();
        let mut s = Script {
            t0: now,
            events: vec![(1000, Event::Fault("closed".into()))],
        };
        let t0 = now - Duration::from_secs(1);
        run(
            Start::At(t0),
            plan(0, Some(2000), None),
            &none(),
            None,
            &mut s,
            &|_| {},
        )
        .await
    });
    assert_eq!(w.ended, End::Completed);
    assert!((0.9..1.5).contains(&w.seconds), "{}", w.seconds);
}

#[test]
fn interrupt_in_warmup_measures_nothing() {
    let (w, took) = run_script(plan(2000, Some(1000), None), vec![(30, Event::Interrupted)]);
    assert_eq!((w.ended, w.seconds), (End::Interrupted, 0.0));
    assert!(took < Duration::from_millis(1000));
}

#[test]
fn fault_mid_measurement_keeps_the_time_measured() {
    let (w, _) = run_script(
        plan(0, Some(5000), Some(6000)),
        vec![(300, Event::Fault("gone".into()))],
    );
    assert_eq!(w.ended, End::Fault("gone".into()));
    assert!((0.25..1.0).contains(&w.seconds), "{}", w.seconds);
}

#[test]
fn peer_closing_in_the_last_moments_is_a_normal_end() {
    let (w, _) = run_script(
        plan(0, Some(700), None),
        vec![(400, Event::Fault("closed".into()))],
    );
    assert_eq!(w.ended, End::Completed);
}

#[test]
fn any_event_ends_the_cooldown_without_changing_the_result() {
    let (w, took) = run_script(
        plan(0, Some(100), Some(5000)),
        vec![(300, Event::Fault("closed".into()))],
    );
    assert_eq!(w.ended, End::Completed);
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn continuous_mode_runs_until_an_event() {
    let (w, _) = run_script(plan(0, None, None), vec![(250, Event::Interrupted)]);
    assert_eq!(w.ended, End::Interrupted);
    assert!((0.2..1.0).contains(&w.seconds), "{}", w.seconds);
}

#[test]
fn a_window_whose_workers_were_held_opens_when_its_clock_started() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let release = crate::stop::Flag::new();
    let (w, wall_t0) = rt.block_on(async {
        // The receiver's answer came 100 ms ago; the workers wait for `release`, so
        // nothing moved since: the window opens then, not at the first sample.
        let t0 = Instant::now() - Duration::from_millis(100);
        let wall_t0 = SystemTime::now() - Duration::from_millis(100);
        let mut s = Script {
            t0: Instant::now(),
            events: vec![],
        };
        let p = plan(0, Some(300), None);
        let w = run(Start::At(t0), p, &none(), Some(&release), &mut s, &|_| {}).await;
        (w, wall_t0)
    });
    assert!(release.is_set(), "the workers were let go");
    assert!((0.29..0.6).contains(&w.seconds), "{}", w.seconds);
    let opened = w.wall.0.duration_since(wall_t0).unwrap_or_default();
    assert!(opened < Duration::from_millis(50), "{opened:?}");
    let lasted = w.wall.1.duration_since(w.wall.0).unwrap().as_secs_f64();
    // Each edge reads the monotonic clock and then the wall clock: a busy machine may
    // run another thread between the two reads (CI saw 1.0 ms), so the spans agree
    // within a scheduler's time slice or two, not to the microsecond.
    assert!(
        (lasted - w.seconds).abs() < 0.020,
        "{lasted} vs {}",
        w.seconds
    );
}

/// No workers at all.
fn none() -> Directions {
    Directions::one(crate::config::Direction::Send, &[])
}
