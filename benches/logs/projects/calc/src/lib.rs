//! A small calculator: the crate whose builds and tests the corpus records.

pub struct Config {
    pub precision: u32,
}

pub fn add(a: i64, b: i64) -> i64 { a + b }
pub fn sub(a: i64, b: i64) -> i64 { a - b }
pub fn mul(a: i64, b: i64) -> i64 { a * b }
pub fn div(a: i64, b: i64) -> Option<i64> { if b == 0 { None } else { Some(a / b) } }
pub fn rem(a: i64, b: i64) -> Option<i64> { if b == 0 { None } else { Some(a % b) } }
pub fn max(a: i64, b: i64) -> i64 { if a > b { a } else { b } }
pub fn min(a: i64, b: i64) -> i64 { if a < b { a } else { b } }
pub fn avg(a: i64, b: i64) -> i64 { (a + b) / 2 }

pub fn describe(c: &Config) -> String {
    let unused = c.precision * 2;
    format!("precision {}", c.precision) // BREAK-BUILD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_case_0() {
        assert_eq!(add(2, 3), 5); // BREAK-TEST-add-0
    }

    #[test]
    fn add_case_1() {
        assert_eq!(add(2, 3), 5); // BREAK-TEST-add-1
    }

    #[test]
    fn add_case_2() {
        assert_eq!(add(2, 3), 5); // BREAK-TEST-add-2
    }

    #[test]
    fn add_case_3() {
        assert_eq!(add(2, 3), 5); // BREAK-TEST-add-3
    }

    #[test]
    fn add_case_4() {
        assert_eq!(add(2, 3), 5); // BREAK-TEST-add-4
    }

    #[test]
    fn sub_case_0() {
        assert_eq!(sub(5, 3), 2); // BREAK-TEST-sub-0
    }

    #[test]
    fn sub_case_1() {
        assert_eq!(sub(5, 3), 2); // BREAK-TEST-sub-1
    }

    #[test]
    fn sub_case_2() {
        assert_eq!(sub(5, 3), 2); // BREAK-TEST-sub-2
    }

    #[test]
    fn sub_case_3() {
        assert_eq!(sub(5, 3), 2); // BREAK-TEST-sub-3
    }

    #[test]
    fn sub_case_4() {
        assert_eq!(sub(5, 3), 2); // BREAK-TEST-sub-4
    }

    #[test]
    fn mul_case_0() {
        assert_eq!(mul(4, 3), 12); // BREAK-TEST-mul-0
    }

    #[test]
    fn mul_case_1() {
        assert_eq!(mul(4, 3), 12); // BREAK-TEST-mul-1
    }

    #[test]
    fn mul_case_2() {
        assert_eq!(mul(4, 3), 12); // BREAK-TEST-mul-2
    }

    #[test]
    fn mul_case_3() {
        assert_eq!(mul(4, 3), 12); // BREAK-TEST-mul-3
    }

    #[test]
    fn mul_case_4() {
        assert_eq!(mul(4, 3), 12); // BREAK-TEST-mul-4
    }

    #[test]
    fn div_case_0() {
        assert_eq!(div(9, 3), Some(3)); // BREAK-TEST-div-0
    }

    #[test]
    fn div_case_1() {
        assert_eq!(div(9, 3), Some(3)); // BREAK-TEST-div-1
    }

    #[test]
    fn div_case_2() {
        assert_eq!(div(9, 3), Some(3)); // BREAK-TEST-div-2
    }

    #[test]
    fn div_case_3() {
        assert_eq!(div(9, 3), Some(3)); // BREAK-TEST-div-3
    }

    #[test]
    fn div_case_4() {
        assert_eq!(div(9, 3), Some(3)); // BREAK-TEST-div-4
    }

    #[test]
    fn rem_case_0() {
        assert_eq!(rem(9, 4), Some(1)); // BREAK-TEST-rem-0
    }

    #[test]
    fn rem_case_1() {
        assert_eq!(rem(9, 4), Some(1)); // BREAK-TEST-rem-1
    }

    #[test]
    fn rem_case_2() {
        assert_eq!(rem(9, 4), Some(1)); // BREAK-TEST-rem-2
    }

    #[test]
    fn rem_case_3() {
        assert_eq!(rem(9, 4), Some(1)); // BREAK-TEST-rem-3
    }

    #[test]
    fn rem_case_4() {
        assert_eq!(rem(9, 4), Some(1)); // BREAK-TEST-rem-4
    }

    #[test]
    fn max_case_0() {
        assert_eq!(max(4, 9), 9); // BREAK-TEST-max-0
    }

    #[test]
    fn max_case_1() {
        assert_eq!(max(4, 9), 9); // BREAK-TEST-max-1
    }

    #[test]
    fn max_case_2() {
        assert_eq!(max(4, 9), 9); // BREAK-TEST-max-2
    }

    #[test]
    fn max_case_3() {
        assert_eq!(max(4, 9), 9); // BREAK-TEST-max-3
    }

    #[test]
    fn max_case_4() {
        assert_eq!(max(4, 9), 9); // BREAK-TEST-max-4
    }

    #[test]
    fn min_case_0() {
        assert_eq!(min(4, 9), 4); // BREAK-TEST-min-0
    }

    #[test]
    fn min_case_1() {
        assert_eq!(min(4, 9), 4); // BREAK-TEST-min-1
    }

    #[test]
    fn min_case_2() {
        assert_eq!(min(4, 9), 4); // BREAK-TEST-min-2
    }

    #[test]
    fn min_case_3() {
        assert_eq!(min(4, 9), 4); // BREAK-TEST-min-3
    }

    #[test]
    fn min_case_4() {
        assert_eq!(min(4, 9), 4); // BREAK-TEST-min-4
    }

    #[test]
    fn avg_case_0() {
        assert_eq!(avg(4, 8), 6); // BREAK-TEST-avg-0
    }

    #[test]
    fn avg_case_1() {
        assert_eq!(avg(4, 8), 6); // BREAK-TEST-avg-1
    }

    #[test]
    fn avg_case_2() {
        assert_eq!(avg(4, 8), 6); // BREAK-TEST-avg-2
    }

    #[test]
    fn avg_case_3() {
        assert_eq!(avg(4, 8), 6); // BREAK-TEST-avg-3
    }

    #[test]
    fn avg_case_4() {
        assert_eq!(avg(4, 8), 6); // BREAK-TEST-avg-4
    }

}
