//! Each page parser on a core of its own.
//!
//! Two parser threads that float share a core more often than they should on a small machine.
//! A parser woken while every core is busy (the connection's thread reading, the upstream
//! sending) waits in the queue of the core it was woken on, and a core that falls idle a moment
//! later does not take it: the kernel skips balancing for a core idle only briefly. Traced on a
//! cold merged torch page (two cores): the parser given the page's tail waited 3 ms behind the
//! other parser while the other core sat idle for 0.9 ms of it. On a core of its own a parser
//! never waits behind the other.
//!
//! Only where the process may run on as many CPUs as it has parsers (the whole machine, or a
//! CPU set): under a CPU quota it may run on any of the host's CPUs, and pinned to the first
//! few it would crowd onto them with every other such process.

/// The CPUs `threads` threads (one per core the process may use) are kept to: the CPUs the
/// process may run on, when it may run on just as many; none otherwise. A process limited by a
/// CPU quota (a container's CPU limit without a CPU set) may run on every CPU of its host but
/// uses only a few at a time: kept to the first few, every such process on a host would crowd
/// onto the same ones.
pub fn cpus_to_pin_to(threads: usize) -> Vec<usize> {
    pin_to(allowed_cpus(), threads)
}

fn pin_to(allowed: Vec<usize>, threads: usize) -> Vec<usize> {
    if allowed.len() == threads {
        allowed
    } else {
        Vec::new()
    }
}

/// The CPUs this process may run on, in order; empty where that cannot be known.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set the kernel fills; zeroed is a valid empty set, and the
    // size passed is its own.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: as above; pid 0 is the calling thread.
    if unsafe { libc::sched_getaffinity(0, size, &raw mut set) } != 0 {
        return Vec::new();
    }
    let capacity = usize::try_from(libc::CPU_SETSIZE).unwrap_or(0);
    // SAFETY: CPU_ISSET reads a bit of a set it is given a reference to, below its size.
    (0..capacity)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

#[cfg(not(target_os = "linux"))]
pub fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Keeps the calling thread on `cpu`; says whether it could (a sandbox may refuse, and the
/// thread then floats as before).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub fn pin_this_thread(cpu: usize) -> bool {
    // SAFETY: as in `allowed_cpus`; CPU_SET writes one bit of the set below its size (checked).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= usize::try_from(libc::CPU_SETSIZE).unwrap_or(0) {
        return false;
    }
    unsafe { libc::CPU_SET(cpu, &mut set) };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: pid 0 is the calling thread; the set is read, not kept.
    unsafe { libc::sched_setaffinity(0, size, &raw const set) == 0 }
}

#[cfg(not(target_os = "linux"))]
pub fn pin_this_thread(_cpu: usize) -> bool {
    false
}

/// The CPU the `index`th of several threads keeps to: the allowed CPUs in turn.
pub fn cpu_for(allowed: &[usize], index: usize) -> Option<usize> {
    allowed.get(index % allowed.len().max(1)).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_pinned_only_where_the_process_has_as_many_cpus_as_threads() {
        assert_eq!(pin_to(vec![0, 1], 2), vec![0, 1]);
        assert_eq!(pin_to(vec![4, 5, 6, 7], 4), vec![4, 5, 6, 7]);
        // Two CPUs' worth of quota on a host of 64: left to float.
        assert_eq!(pin_to((0..64).collect(), 2), Vec::<usize>::new());
        assert_eq!(pin_to(Vec::new(), 2), Vec::<usize>::new());
    }

    #[test]
    fn threads_take_the_allowed_cpus_in_turn() {
        assert_eq!(cpu_for(&[2, 5], 0), Some(2));
        assert_eq!(cpu_for(&[2, 5], 1), Some(5));
        assert_eq!(cpu_for(&[2, 5], 2), Some(2));
        assert_eq!(cpu_for(&[], 0), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_pinned_runs_on_its_cpu_only() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty(), "this process may run somewhere");
        let cpu = *allowed.last().unwrap();
        let pinned = std::thread::spawn(move || (pin_this_thread(cpu), allowed_cpus()))
            .join()
            .unwrap();
        assert_eq!(pinned, (true, vec![cpu]));
        // The other threads keep what they had.
        assert_eq!(allowed_cpus(), allowed);
    }
}
