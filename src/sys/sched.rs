//! What the scheduler did to the calling thread: how often it was preempted (Linux's
//! getrusage; Windows keeps no such count, and there it reads 0, so no sample is set
//! aside for it).

pub(crate) use super::os::sched::preemptions;
