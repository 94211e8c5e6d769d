//! The statistics against scipy and independent implementations.

use super::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {
        assert_close!($a, $b, 1e-9)
    };
    ($a:expr, $b:expr, $tol:expr) => {{
        let (a, b) = ($a, $b);
        assert!(close(a, b, $tol), "{} = {a}, expected {b}", stringify!($a));
    }};
}

const D: [f64; 8] = [0.021, 0.034, -0.005, 0.012, 0.027, 0.018, 0.009, 0.041];

#[test]
fn descriptive() {
    // numpy: mean(D)=0.019625, std(D, ddof=1)=0.014637891143974844,
    // var(D, ddof=1)=0.00021426785714285718
    assert_close!(mean(&D), 0.019625);
    assert_close!(variance(&D), 0.000_214_267_857_142_857_18);
    assert_close!(sd(&D), 0.014_637_891_143_974_844);
    let x = [3.1, 1.2, 9.9, 4.4, 2.2, 7.0, 5.5];
    // numpy.median -> 4.4; scipy.stats.median_abs_deviation -> 2.2
    assert_close!(median(&x), 4.4);
    assert_close!(mad(&x), 2.2);
    assert_close!(median(&[1.0, 3.0, 2.0, 10.0]), 2.5);
}

#[test]
fn quantile_type7() {
    let x = [3.1, 1.2, 9.9, 4.4, 2.2, 7.0, 5.5];
    // numpy.quantile(x, q) (method='linear', type 7)
    for (q, want) in [
        (0.0, 1.2),
        (0.1, 1.800_000_000_000_000_3),
        (0.25, 2.650_000_000_000_000_4),
        (0.5, 4.4),
        (0.9, 8.160_000_000_000_002),
        (1.0, 9.9),
    ] {
        assert_close!(quantile(&x, q), want, 1e-12);
    }
    assert_close!(quantile(&x, -3.0), 1.2);
    assert_close!(quantile(&x, 7.0), 9.9);
    assert_eq!(quantile(&[5.0], 0.3), 5.0);
}

#[test]
fn undefined_inputs_are_nan_not_panics() {
    assert!(mean(&[]).is_nan());
    assert!(variance(&[1.0]).is_nan());
    assert!(sd(&[]).is_nan());
    assert!(median(&[]).is_nan());
    assert!(mad(&[]).is_nan());
    assert!(quantile(&[1.0, 2.0], f64::NAN).is_nan());
    assert_eq!(median(&[f64::NAN, 1.0, 2.0]), 2.0);
    assert_eq!(variance(&[0.1, 0.1, 0.1]), 0.0);
    assert_eq!(mean(&[0.1, 0.1, 0.1]), 0.1);
}

#[test]
fn winsorize_clamps() {
    assert_eq!(
        winsorize(&[-5.0, 0.5, 1.0, 9.0], 1.0, 2.0),
        vec![-1.0, 0.5, 1.0, 3.0]
    );
    assert_eq!(winsorize(&[-5.0, 9.0], 1.0, -2.0), vec![-1.0, 3.0]);
    assert_eq!(winsorize(&[-5.0, 9.0], f64::NAN, 2.0), vec![-5.0, 9.0]);
    assert_eq!(winsorize(&[-5.0, 9.0], 0.0, f64::INFINITY), vec![-5.0, 9.0]);
    assert!(winsorize(&[], 0.0, 1.0).is_empty());
}

#[test]
fn paired_t_matches_scipy() {
    // scipy.stats.ttest_1samp(D, 0, alternative='greater')
    //   -> t=3.792068254722046, p=0.003392286553908946, df=7
    // ttest_1samp(D, 0).confidence_interval(0.95)
    //   -> (0.007387416755098764, 0.03186258324490124)
    let r = paired_t(&D, 0.0).unwrap();
    assert_eq!(r.n, 8);
    assert_close!(r.t, 3.792_068_254_722_046);
    assert_close!(r.p_one_sided, 0.003_392_286_553_908_946, 1e-7);
    assert_close!(r.df, 7.0);
    assert_close!(r.se, 0.014_637_891_143_974_844 / 8f64.sqrt());
    assert_close!(r.ci95.0, 0.007_387_416_755_098_764, 1e-7);
    assert_close!(r.ci95.1, 0.031_862_583_244_901_24, 1e-7);
    // scipy.stats.ttest_1samp(D, 0.01, alternative='greater')
    //   -> t=1.859804175882787, p=0.0526208618625782
    let r = paired_t(&D, 0.01).unwrap();
    assert_close!(r.t, 1.859_804_175_882_787);
    assert_close!(r.p_one_sided, 0.052_620_861_862_578_2, 1e-7);
    // The CI is of the mean, independent of mu0.
    assert_close!(r.ci95.0, 0.007_387_416_755_098_764, 1e-7);
}

#[test]
fn paired_t_zero_variance_decides_without_dividing() {
    let up = paired_t(&[0.1, 0.1, 0.1], 0.0).unwrap();
    assert_eq!((up.p_one_sided, up.t, up.sd), (0.0, f64::INFINITY, 0.0));
    assert_eq!(up.ci95, (0.1, 0.1));
    let down = paired_t(&[-0.2; 4], 0.0).unwrap();
    assert_eq!((down.p_one_sided, down.t), (1.0, f64::NEG_INFINITY));
    // Equal to mu0 exactly, even though 3 × 0.1 / 3 ≠ 0.1 in floating point.
    let eq = paired_t(&[0.1, 0.1, 0.1], 0.1).unwrap();
    assert_eq!((eq.p_one_sided, eq.t), (0.5, 0.0));
    // A zero-variance sample below a positive threshold is not a keep.
    assert_eq!(paired_t(&[0.001; 3], 0.01).unwrap().p_one_sided, 1.0);
}

#[test]
fn paired_t_rejects_degenerate_input() {
    assert!(paired_t(&[], 0.0).is_none());
    assert!(paired_t(&[1.0], 0.0).is_none());
    assert!(paired_t(&[1.0, f64::NAN], 0.0).is_none());
    assert!(paired_t(&[1.0, f64::INFINITY], 0.0).is_none());
    assert!(paired_t(&[1.0, 2.0], f64::NAN).is_none());
}

#[test]
fn welch_matches_scipy() {
    let a = [10.2, 9.8, 10.5, 10.9, 10.1, 10.4];
    let b = [9.1, 9.9, 9.4, 9.0, 9.6, 9.3, 9.8, 9.2];
    // scipy.stats.ttest_ind(a, b, equal_var=False, alternative='greater')
    //   -> t=4.701704914818571, p=0.0004219610485760522, df=9.98019202754379
    // .confidence_interval(0.95) (two-sided) -> (0.47556660970349457, 1.332766723629839)
    let r = welch_t(&a, &b).unwrap();
    assert_eq!(r.n, 14);
    assert_close!(r.t, 4.701_704_914_818_571);
    assert_close!(r.df, 9.980_192_027_543_79);
    assert_close!(r.p_one_sided, 0.000_421_961_048_576_052_2, 1e-6);
    assert_close!(r.ci95.0, 0.475_566_609_703_494_57, 1e-7);
    assert_close!(r.ci95.1, 1.332_766_723_629_839, 1e-7);
    assert_close!(r.se, r.sd * (1.0 / 6.0 + 1.0 / 8.0f64).sqrt());
    // Reversed: ttest_ind(b, a, ..., alternative='greater') -> p=0.9995780389514239
    let r = welch_t(&b, &a).unwrap();
    assert_close!(r.p_one_sided, 0.999_578_038_951_423_9, 1e-9);
}

#[test]
fn welch_degenerate() {
    assert!(welch_t(&[1.0], &[1.0, 2.0]).is_none());
    assert!(welch_t(&[1.0, 2.0], &[f64::NAN, 2.0]).is_none());
    let r = welch_t(&[2.0, 2.0], &[1.0, 1.0, 1.0]).unwrap();
    assert_eq!((r.p_one_sided, r.mean, r.df), (0.0, 1.0, 3.0));
}

#[test]
fn t_distribution_matches_scipy() {
    // scipy.stats.t.ppf(p, df)
    for (p, df, want) in [
        (0.975, 5.0, 2.570_581_835_636_314_6),
        (0.95, 11.0, 1.795_884_818_704_043_3),
        (0.8, 11.0, 0.875_529_978_073_881_9),
        (0.9831, 11.0, 2.423_444_825_349_005_5),
        (0.025, 3.0, -3.182_446_305_283_708_6),
        (0.5, 7.0, 0.0),
        (0.999, 2.5, 13.822_193_110_865_96),
        (0.9, 1e6, 1.281_552_412_129_939),
    ] {
        assert_close!(t_quantile(p, df), want, 1e-8);
    }
    // scipy.stats.t.sf(t, df)
    for (t, df, want) in [
        (2.0, 5.0, 0.050_969_739_414_929_174),
        (-1.3, 11.0, 0.889_909_368_650_079_1),
        (0.0, 4.0, 0.5),
        (10.0, 3.0, 0.001_064_199_529_207_075_1),
        (1.5, 2.5, 0.123_918_226_543_148_09),
    ] {
        assert_close!(t_sf(t, df), want, 1e-9);
    }
    // scipy.stats.t.sf(30, 20) -> 2.0976126619998272e-18 (relative accuracy)
    assert!((t_sf(30.0, 20.0) / 2.097_612_661_999_827_2e-18 - 1.0).abs() < 1e-6);
    // scipy.stats.norm.ppf(0.975) -> 1.959963984540054
    assert_close!(t_quantile(0.975, f64::INFINITY), 1.959_963_984_540_054);
}

#[test]
fn t_functions_never_panic() {
    assert_eq!(t_quantile(0.0, 5.0), f64::NEG_INFINITY);
    assert_eq!(t_quantile(1.5, 5.0), f64::INFINITY);
    assert!(t_quantile(f64::NAN, 5.0).is_nan());
    assert!(t_quantile(0.5, 0.0).is_nan());
    assert!(t_quantile(0.5, -1.0).is_nan());
    assert!(t_sf(f64::NAN, 3.0).is_nan());
    assert!(t_sf(1.0, f64::NAN).is_nan());
    assert_eq!(t_sf(f64::INFINITY, 3.0), 0.0);
    assert_eq!(t_sf(f64::NEG_INFINITY, 3.0), 1.0);
    assert_close!(t_sf(1.0, f64::INFINITY), 0.158_655_253_931_457_05);
}

#[test]
fn mde_matches_scipy() {
    // (t.ppf(1-a, n-1) + t.ppf(power, n-1)) * sd / sqrt(n) with scipy.stats.t:
    // (0.03, 12, 0.05, 0.8) -> 0.023135130780553265
    // (1.0, 12, 0.0169, 0.8) -> 0.9523319954029985
    // (0.02, 5, 0.05, 0.9) -> 0.032781231136663314
    assert_close!(
        min_detectable_effect(0.03, 12, 0.05, 0.8),
        0.023_135_130_780_553_265,
        1e-8
    );
    assert_close!(
        min_detectable_effect(1.0, 12, 0.0169, 0.8),
        0.952_331_995_402_998_5,
        1e-8
    );
    assert_close!(
        min_detectable_effect(0.02, 5, 0.05, 0.9),
        0.032_781_231_136_663_314,
        1e-8
    );
    assert_eq!(min_detectable_effect(0.03, 1, 0.05, 0.8), f64::INFINITY);
    assert_eq!(min_detectable_effect(0.0, 12, 0.05, 0.8), 0.0);
}

#[test]
fn splitmix_reference_values() {
    // Reference: the published SplitMix64 (Vigna's splitmix64.c), seed 0.
    assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    // Same algorithm in Python (64-bit masked arithmetic), seed 42.
    let mut r = SplitMix64::new(42);
    let got: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
    assert_eq!(
        got,
        [
            0xbdd7_3226_2feb_6e95,
            0x28ef_e333_b266_f103,
            0x4752_6757_130f_9f52,
            0x581c_e1ff_0e4a_e394,
            0x09bc_585a_2448_23f2,
        ]
    );
    // (x >> 11) * 2**-53 in Python, seed 42.
    let mut r = SplitMix64::new(42);
    assert_eq!(r.next_f64(), 0.741_564_878_771_823_3);
    assert_eq!(r.next_f64(), 0.159_910_392_876_920_1);
    assert_eq!(r.next_f64(), 0.278_601_130_255_138_66);
}

#[test]
fn splitmix_derived_draws() {
    // Python: Lemire's method with seed 7, n = 10 -> [3, 0, 9, 5, 4, 2, 4, 3]
    let mut r = SplitMix64::new(7);
    let got: Vec<u64> = (0..8).map(|_| r.below(10)).collect();
    assert_eq!(got, [3, 0, 9, 5, 4, 2, 4, 3]);
    assert_eq!(r.below(0), 0);
    assert_eq!(r.below(1), 0);
    // Python: sqrt(-2 ln(1-u1)) cos(2π u2), seed 42
    let mut r = SplitMix64::new(42);
    for want in [
        0.882_248_906_222_268_8,
        -0.450_849_875_718_860_1,
        0.188_352_634_115_931_5,
    ] {
        assert_close!(r.normal(), want, 1e-12);
    }
    // Moments of many draws, as a smoke test of the transform.
    let mut r = SplitMix64::new(1);
    let xs: Vec<f64> = (0..20_000).map(|_| r.normal()).collect();
    assert!(mean(&xs).abs() < 0.03);
    assert!((sd(&xs) - 1.0).abs() < 0.03);
    let mut r = SplitMix64::new(3);
    assert!((0..10_000).all(|_| (0.0..1.0).contains(&r.next_f64())));
}
#[test]
fn pooled_variance_weights_by_degrees_of_freedom() {
    // ((1-2)^2+(3-2)^2 + (10-12)^2+(14-12)^2+(12-12)^2) / (1 + 2) = 10/3
    let (v, df) = pooled_variance([&[1.0, 3.0][..], &[10.0, 14.0, 12.0][..], &[5.0][..]]).unwrap();
    assert!((v - 10.0 / 3.0).abs() < 1e-12);
    assert_eq!(df, 3.0);
    assert!(pooled_variance([&[1.0][..]]).is_none());
}

#[test]
fn f_quantiles_match_scipy() {
    // scipy.stats.f.ppf(0.99, d1, d2)
    for (d1, d2, want) in [
        (2.0, 9.0, 8.021517309932058),
        (4.0, 30.0, 4.017876836587524),
        (7.0, 30.0, 3.3044988866923948),
        (11.0, 20.0, 3.294108428721851),
    ] {
        let got = f_quantile(0.99, d1, d2);
        assert!(
            (got - want).abs() < 1e-6 * want,
            "F.99({d1},{d2}) = {got}, want {want}"
        );
    }
}

#[test]
fn mann_kendall_matches_an_independent_implementation() {
    // Reference: direct O(n^2) Python with numpy; Sen slope also equals
    // scipy.stats.theilslopes(x).slope = 0.6416666666666666.
    let mk = mann_kendall(&[1.0, 2.3, 2.1, 3.5, 4.0, 3.9, 5.2, 6.1]).unwrap();
    assert_eq!(mk.s, 24.0);
    assert!((mk.var_s - 65.33333333333333).abs() < 1e-9);
    assert!((mk.z - 2.8455120410060126).abs() < 1e-9);
    assert!((mk.sen_slope - 0.6416666666666666).abs() < 1e-12);
    // With ties: var = (n(n-1)(2n+5) - Σ t(t-1)(2t+5)) / 18 = 119.333…
    let mk = mann_kendall(&[5.0, 5.0, 4.0, 4.0, 4.0, 3.0, 6.0, 2.0, 2.0, 1.0]).unwrap();
    assert_eq!(mk.s, -28.0);
    assert!((mk.var_s - 119.33333333333333).abs() < 1e-9);
    assert!((mk.z - -2.4716267006742814).abs() < 1e-9);
    assert!((mk.sen_slope - -0.42857142857142855).abs() < 1e-12);
    assert!(mann_kendall(&[1.0, f64::NAN, 2.0]).is_none());
}
