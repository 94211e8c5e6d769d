//! Shared by the simulation benchmarks: a deterministic parallel map. Work is
//! split into fixed chunks and reassembled in index order, so the output does
//! not depend on the number of cores or on scheduling.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `f(index)` for every index in `0..n` over all cores, in
/// fixed chunks, and returns the results in index order.
pub fn run<T: Send>(n: usize, chunk: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map(|c| c.get())
        .unwrap_or(1);
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Vec<T>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let start = next.fetch_add(chunk, Ordering::Relaxed);
                    if start >= n {
                        break;
                    }
                    let out: Vec<T> = (start..(start + chunk).min(n)).map(&f).collect();
                    done.lock().unwrap().push((start, out));
                }
            });
        }
    });
    let mut chunks = done.into_inner().unwrap();
    chunks.sort_by_key(|c| c.0);
    chunks.into_iter().flat_map(|c| c.1).collect()
}
