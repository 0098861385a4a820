//! The ways a side's bytes go, each measured on its own: a plain test has one (a sender's
//! bytes go out, a receiver's come in), `--bidir` two over the same connections, and a
//! receiver watches both, not knowing until its senders' headers come which it serves.

use std::ops::Range;
use std::sync::Arc;

use crate::config::Direction;
use crate::data::WorkerState;

/// A side's workers, in one group per way (each worker counts one way only).
#[derive(Debug, Clone)]
pub(crate) struct Directions {
    workers: Vec<Arc<WorkerState>>,
    groups: Vec<(Direction, Range<usize>)>,
}

impl Directions {
    /// One way: every worker's bytes go `direction`.
    pub(crate) fn one(direction: Direction, workers: &[Arc<WorkerState>]) -> Self {
        Self {
            workers: workers.to_vec(),
            groups: vec![(direction, 0..workers.len())],
        }
    }

    /// Two ways, `first`'s workers and then `second`'s.
    pub(crate) fn two(
        first: (Direction, &[Arc<WorkerState>]),
        second: (Direction, &[Arc<WorkerState>]),
    ) -> Self {
        let n = first.1.len();
        Self {
            workers: first.1.iter().chain(second.1).cloned().collect(),
            groups: vec![(first.0, 0..n), (second.0, n..n + second.1.len())],
        }
    }

    /// Every worker, each way's in turn: what the edges sample.
    pub(crate) fn all(&self) -> &[Arc<WorkerState>] {
        &self.workers
    }

    /// Each way: its direction and where its workers lie in `all`.
    pub(crate) fn groups(&self) -> impl Iterator<Item = (Direction, Range<usize>)> + '_ {
        self.groups.iter().cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_ways_keep_their_workers_apart_in_order() {
        let a: Vec<_> = (0..3).map(|_| Arc::new(WorkerState::default())).collect();
        let b: Vec<_> = (0..3).map(|_| Arc::new(WorkerState::default())).collect();
        let w = Directions::two((Direction::Send, &a), (Direction::Receive, &b));
        assert_eq!(w.all().len(), 6);
        assert!(Arc::ptr_eq(&w.all()[3], &b[0]));
        let g: Vec<_> = w.groups().collect();
        assert_eq!(g, [(Direction::Send, 0..3), (Direction::Receive, 3..6)]);
        let one = Directions::one(Direction::Receive, &a);
        assert_eq!(
            one.groups().collect::<Vec<_>>(),
            [(Direction::Receive, 0..3)]
        );
    }
}
