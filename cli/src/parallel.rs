//! Work spread over every core: the runs of `sweep` and the candidates of `plan`.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `specs` on every core (each thread takes the next run until none is left) and returns
/// the outcomes in the order of `specs`.
pub fn run_parallel<S: Send, T: Send, F: Fn(S) -> T + Sync>(specs: Vec<S>, run: F) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(specs.len()).max(1);
    let next = AtomicUsize::new(0);
    let specs: Vec<std::sync::Mutex<Option<S>>> = specs.into_iter().map(|s| std::sync::Mutex::new(Some(s))).collect();
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(slot) = specs.get(i) else { break };
                        let spec = slot.lock().ok().and_then(|mut s| s.take());
                        if let Some(spec) = spec {
                            out.push((i, run(spec)));
                        }
                    }
                    out
                })
            })
            .collect();
        // A worker panics only on a bug; its runs are then missing, never wrong.
        workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, t)| t).collect()
}
