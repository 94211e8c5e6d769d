//! ooda quickstart target: a dense matrix multiply `C = A * B` whose speed depends on
//! two knobs read from the environment.
//!
//! The work is fixed: the same `N x N` product (f64, row-major) in every setting. Only the
//! order in which memory is touched changes, and on a modern CPU that is most of the cost:
//!
//! - `LOOP_ORDER` (`ijk`, `ikj`, `jik`, `jki`, `kij`, `kji`; default `ijk`) picks the loop
//!   nesting. The textbook `ijk` walks a column of `B` in its inner loop (a new cache line
//!   per element, and a serial dependency chain the compiler may not vectorize); `ikj` and
//!   `kij` stream rows of `B` and `C` (contiguous, vectorized); `jki`/`kji` walk columns of
//!   both `A` and `C` (worst).
//! - `TILE` (integer >= 1; default: untiled) cuts all three loops into `TILE`-sized blocks
//!   (cache blocking), so the pieces of `A`, `B` and `C` in use stay in L1/L2 between
//!   reuses instead of being fetched again from L3. It pays off for the column-walking
//!   orders (sweet spot around 16-48); for the streaming orders small tiles only shorten
//!   the vectorized inner loop and add overhead. `TILE >= N` is the same as untiled.
//!
//! The defaults (untiled textbook `ijk`) are deliberately the naive first draft, so a knob
//! search has something real to find; the knobs interact, so the best tile depends on the
//! loop order.
//!
//! Output: exactly one line `METRIC time_ms=<ms>` on stdout (the faster of two timed runs
//! of the kernel alone), and the checksum on stderr. Matrix entries are small integers, so
//! every loop order and tile size computes the exact same result: a wrong checksum exits 1.
//! `--check` instead compares the configured kernel with a separate naive one on a few
//! small sizes that tiles do not divide, and exits 1 on a mismatch. Invalid knob values
//! exit 2 with a message on stderr.

use std::process::ExitCode;
use std::time::Instant;

/// Matrix size of the timed run: the default setting takes ~0.1 s per repetition, and
/// `B` (1.8 MB) is larger than a typical per-core L2 cache. Not a power of two: at
/// `N = 512` the column walk of the default hits the same few cache sets and runs 4x
/// slower per flop, which would make the baseline unrealistically bad.
const N: usize = 480;
/// Timed repetitions; the fastest is reported.
const REPS: usize = 2;
/// [`checksum`] of the correct `N x N` product; every setting must reproduce it exactly.
const EXPECTED_CHECKSUM: i64 = 410_589;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    Ijk,
    Ikj,
    Jik,
    Jki,
    Kij,
    Kji,
}

const ORDERS: [(&str, Order); 6] = [
    ("ijk", Order::Ijk),
    ("ikj", Order::Ikj),
    ("jik", Order::Jik),
    ("jki", Order::Jki),
    ("kij", Order::Kij),
    ("kji", Order::Kji),
];

impl Order {
    fn name(self) -> &'static str {
        ORDERS
            .iter()
            .find(|(_, o)| *o == self)
            .map_or("?", |(n, _)| n)
    }
}

struct Knobs {
    /// Block size; `None` = untiled.
    tile: Option<usize>,
    order: Order,
}

impl Knobs {
    fn describe(&self) -> String {
        let tile = self.tile.map_or("untiled".to_string(), |t| t.to_string());
        format!("TILE={tile} LOOP_ORDER={}", self.order.name())
    }
}

/// The file ooda writes the knob values of a tree to. After the ooda branch
/// is merged, the winning setting is in this file of the checkout, and the
/// program picks it up from there.
const KNOBS_FILE: &str = "ooda.knobs.env";

/// A knob's value: the environment variable if set (ooda sets it for every
/// measurement; a person may too), else the line `NAME=value` of
/// `ooda.knobs.env` in the current directory, else `None`.
fn knob(name: &str) -> Result<Option<String>, String> {
    match std::env::var(name) {
        Ok(v) => return Ok(Some(v)),
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(format!("{name} is not valid UTF-8"));
        }
        Err(std::env::VarError::NotPresent) => {}
    }
    let Ok(text) = std::fs::read_to_string(KNOBS_FILE) else {
        return Ok(None);
    };
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
        .map(str::to_string))
}

fn read_knobs() -> Result<Knobs, String> {
    let tile = match knob("TILE")? {
        None => None,
        Some(s) if s.trim().is_empty() => None,
        Some(s) => match s.trim().parse::<usize>() {
            Ok(t) if t >= 1 => Some(t),
            _ => {
                return Err(format!(
                    "TILE={s:?} is invalid; expected an integer >= 1 (block size), e.g. TILE=64, \
                     or unset for untiled"
                ));
            }
        },
    };
    let order = match knob("LOOP_ORDER")? {
        None => Order::Ijk,
        Some(s) if s.trim().is_empty() => Order::Ijk,
        Some(s) => {
            let want = s.trim().to_ascii_lowercase();
            match ORDERS.iter().find(|(name, _)| *name == want) {
                Some(&(_, o)) => o,
                None => {
                    let names: Vec<&str> = ORDERS.iter().map(|(n, _)| *n).collect();
                    return Err(format!(
                        "LOOP_ORDER={s:?} is invalid; expected one of {}, e.g. LOOP_ORDER=ikj",
                        names.join(", ")
                    ));
                }
            }
        }
    };
    Ok(Knobs { tile, order })
}

/// Deterministic matrix with small integer entries in [-4, 4] (xorshift64).
fn matrix(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed | 1;
    (0..n * n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 32) % 9) as f64 - 4.0
        })
        .collect()
}

/// `C += A * B` for the block rows `i0..i1`, inner dimension `k0..k1`, columns `j0..j1`,
/// with the loops nested in `order`.
#[allow(clippy::too_many_arguments)]
fn block(
    order: Order,
    n: usize,
    a: &[f64],
    b: &[f64],
    c: &mut [f64],
    (i0, i1): (usize, usize),
    (k0, k1): (usize, usize),
    (j0, j1): (usize, usize),
) {
    match order {
        Order::Ijk => {
            for i in i0..i1 {
                for j in j0..j1 {
                    let mut s = c[i * n + j];
                    for k in k0..k1 {
                        s += a[i * n + k] * b[k * n + j];
                    }
                    c[i * n + j] = s;
                }
            }
        }
        Order::Jik => {
            for j in j0..j1 {
                for i in i0..i1 {
                    let mut s = c[i * n + j];
                    for k in k0..k1 {
                        s += a[i * n + k] * b[k * n + j];
                    }
                    c[i * n + j] = s;
                }
            }
        }
        Order::Ikj => {
            for i in i0..i1 {
                for k in k0..k1 {
                    let aik = a[i * n + k];
                    let brow = &b[k * n + j0..k * n + j1];
                    let crow = &mut c[i * n + j0..i * n + j1];
                    for (cv, bv) in crow.iter_mut().zip(brow) {
                        *cv += aik * bv;
                    }
                }
            }
        }
        Order::Kij => {
            for k in k0..k1 {
                for i in i0..i1 {
                    let aik = a[i * n + k];
                    let brow = &b[k * n + j0..k * n + j1];
                    let crow = &mut c[i * n + j0..i * n + j1];
                    for (cv, bv) in crow.iter_mut().zip(brow) {
                        *cv += aik * bv;
                    }
                }
            }
        }
        Order::Jki => {
            for j in j0..j1 {
                for k in k0..k1 {
                    let bkj = b[k * n + j];
                    for i in i0..i1 {
                        c[i * n + j] += a[i * n + k] * bkj;
                    }
                }
            }
        }
        Order::Kji => {
            for k in k0..k1 {
                for j in j0..j1 {
                    let bkj = b[k * n + j];
                    for i in i0..i1 {
                        c[i * n + j] += a[i * n + k] * bkj;
                    }
                }
            }
        }
    }
}

/// `C = A * B` (all `n x n`, row-major), blocked by `tile` (`None` = one block).
fn matmul(knobs: &Knobs, n: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    c.fill(0.0);
    let t = knobs.tile.unwrap_or(n).clamp(1, n.max(1));
    for i0 in (0..n).step_by(t) {
        for k0 in (0..n).step_by(t) {
            for j0 in (0..n).step_by(t) {
                block(
                    knobs.order,
                    n,
                    a,
                    b,
                    c,
                    (i0, (i0 + t).min(n)),
                    (k0, (k0 + t).min(n)),
                    (j0, (j0 + t).min(n)),
                );
            }
        }
    }
}

/// Position-weighted checksum; exact because every entry is an integer.
fn checksum(c: &[f64]) -> i64 {
    c.iter().enumerate().fold(0i64, |acc, (idx, &v)| {
        acc.wrapping_add((v as i64).wrapping_mul(idx as i64 % 7 + 1))
    })
}

/// The textbook product, kept separate from [`block`] so `--check` has an independent
/// reference.
fn naive(n: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    for i in 0..n {
        for j in 0..n {
            c[i * n + j] = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
        }
    }
}

/// Compare the configured kernel with [`naive`] on small sizes that tiles do not divide.
fn check(knobs: &Knobs) -> ExitCode {
    for n in [1, 2, 7, 33, 65, 100] {
        let a = matrix(n, 0x9E37_79B9_7F4A_7C15);
        let b = matrix(n, 0xD1B5_4A32_D192_ED03);
        let mut want = vec![0.0; n * n];
        let mut got = vec![0.0; n * n];
        naive(n, &a, &b, &mut want);
        matmul(knobs, n, &a, &b, &mut got);
        if let Some(idx) = (0..n * n).find(|&idx| want[idx] != got[idx]) {
            eprintln!(
                "check FAILED: n={n} {}: C[{}][{}] = {} but expected {}",
                knobs.describe(),
                idx / n,
                idx % n,
                got[idx],
                want[idx]
            );
            return ExitCode::FAILURE;
        }
    }
    eprintln!("check ok: {}", knobs.describe());
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let knobs = match read_knobs() {
        Ok(k) => k,
        Err(msg) => {
            eprintln!("quickstart: {msg}");
            return ExitCode::from(2);
        }
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {}
        [flag] if flag == "--check" => return check(&knobs),
        _ => {
            eprintln!(
                "usage: quickstart [--check]\n  knobs (env): TILE=<int >= 1> (unset = untiled), \
                 LOOP_ORDER=ijk|ikj|jik|jki|kij|kji (unset = ijk)"
            );
            return ExitCode::from(2);
        }
    }

    let a = matrix(N, 0x9E37_79B9_7F4A_7C15);
    let b = matrix(N, 0xD1B5_4A32_D192_ED03);
    let mut c = vec![0.0; N * N];
    let mut best = f64::INFINITY;
    let mut sum = 0;
    for _ in 0..REPS {
        let start = Instant::now();
        matmul(&knobs, N, &a, &b, &mut c);
        let ms = start.elapsed().as_secs_f64() * 1e3;
        best = best.min(ms);
        sum = checksum(std::hint::black_box(&c));
        if sum != EXPECTED_CHECKSUM {
            eprintln!(
                "quickstart: wrong result with {}: checksum {sum}, expected {EXPECTED_CHECKSUM}",
                knobs.describe()
            );
            return ExitCode::FAILURE;
        }
    }
    eprintln!("n={N} {} checksum={sum}", knobs.describe());
    println!("METRIC time_ms={best:.3}");
    ExitCode::SUCCESS
}
