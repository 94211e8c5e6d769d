//! Cron translation and fire-time tests. Expected times are written out by
//! hand from a calendar (2024-01-01 is a Monday; 2024 is a leap year), and a
//! minute-by-minute reference matcher with classic cron's rules checks whole
//! years of fire times, so the translation to the crate's dialect cannot
//! drift from what a crontab line means.

use chrono::{Datelike, NaiveDate};
use chrono_tz::{America, Europe, Tz};

use super::*;

const UTC: Zone = Zone::Named(Tz::UTC);

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .with_timezone(&Utc)
}

fn cron(expr: &str) -> Cron {
    Cron::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// The next `n` fire times after `from`, as RFC 3339 UTC strings.
fn fires(expr: &str, zone: &Zone, from: &str, n: usize) -> Vec<String> {
    let c = cron(expr);
    let mut t = utc(from);
    let mut out = Vec::new();
    for _ in 0..n {
        t = zone.next_fire(&c, t).expect("fires");
        out.push(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    }
    out
}

#[test]
fn translation_table() {
    let table: &[(&str, &[&str])] = &[
        ("* * * * *", &["0 * * * * *"]),
        ("*/20 * * * *", &["0 0,20,40 * * * *"]),
        ("0-4 * * * *", &["0 0-4 * * * *"]),
        ("5/15 * * * *", &["0 5,20,35,50 * * * *"]),
        ("30 */6 * * *", &["0 30 0,6,12,18 * * *"]),
        ("0 9-17/4 * * *", &["0 0 9,13,17 * * *"]),
        // Weekdays: crontab 0/7 = Sunday becomes the crate's 1.
        ("0 0 * * 0", &["0 0 0 * * 1"]),
        ("0 0 * * 7", &["0 0 0 * * 1"]),
        ("0 0 * * sun", &["0 0 0 * * 1"]),
        ("0 9 * * 1-5", &["0 0 9 * * 2-6"]),
        ("0 9 * * MON-FRI", &["0 0 9 * * 2-6"]),
        ("0 12 * * 5-7", &["0 0 12 * * 1,6,7"]),
        ("0 0 * * */2", &["0 0 0 * * 1,3,5,7"]),
        ("0 0 * * 0-6", &["0 0 0 * * *"]),
        ("0 0 * * 1,3,SAT", &["0 0 0 * * 2,4,7"]),
        // Months and names.
        ("15 10 1,15 JAN,jul *", &["0 15 10 1,15 1,7 *"]),
        ("0 12 * JAN-MAR,OCT *", &["0 0 12 * 1-3,10 *"]),
        // Day-of-month OR day-of-week when both are restricted: two expressions.
        ("0 0 13 * FRI", &["0 0 0 13 * *", "0 0 0 * * 6"]),
        ("0 0 1 * MON", &["0 0 0 1 * *", "0 0 0 * * 2"]),
        // ... but AND when either starts with `*` (classic cron keys on the star).
        (
            "0 0 */2 * MON",
            &["0 0 0 1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31 * 2"],
        ),
        ("0 0 ? * MON", &["0 0 0 * * 2"]),
        // Macros.
        ("@hourly", &["0 0 * * * *"]),
        ("@daily", &["0 0 0 * * *"]),
        ("@midnight", &["0 0 0 * * *"]),
        ("@weekly", &["0 0 0 * * 1"]),
        ("@monthly", &["0 0 0 1 * *"]),
        ("@yearly", &["0 0 0 1 1 *"]),
        ("@ANNUALLY", &["0 0 0 1 1 *"]),
        // An optional leading seconds field.
        ("*/15 * * * * *", &["0,15,30,45 * * * * *"]),
        ("30 0 9 * * 1-5", &["30 0 9 * * 2-6"]),
    ];
    for (expr, want) in table {
        let got = cron(expr);
        assert_eq!(got.translated(), *want, "{expr}");
        for e in got.translated() {
            cron::Schedule::from_str(e).unwrap_or_else(|err| panic!("{e}: {err}"));
        }
    }
}

#[test]
fn weekday_names_and_numbers_agree_and_seven_is_sunday() {
    let names = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
    for (n, name) in names.iter().enumerate() {
        let by_num = cron(&format!("0 0 * * {n}"));
        let by_name = cron(&format!("0 0 * * {name}"));
        let lower = cron(&format!("0 0 * * {}", name.to_lowercase()));
        assert_eq!(by_num.fields, by_name.fields, "{name}");
        assert_eq!(by_num.fields, lower.fields, "{name}");
        // The crate numbers Sunday 1: its next fire lands on the right weekday.
        let t = UTC
            .next_fire(&by_name, utc("2024-01-01T00:00:00Z"))
            .unwrap();
        assert_eq!(t.weekday().num_days_from_sunday(), n as u32, "{name}");
    }
    assert_eq!(cron("0 0 * * 7").fields, cron("0 0 * * 0").fields);
    let months = [
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ];
    for (i, name) in months.iter().enumerate() {
        assert_eq!(
            cron(&format!("0 0 1 {} *", i + 1)).fields,
            cron(&format!("0 0 1 {name} *")).fields
        );
    }
}

#[test]
fn known_fire_times() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "*/20 * * * *",
            "2024-01-01T00:05:00Z",
            &[
                "2024-01-01T00:20:00Z",
                "2024-01-01T00:40:00Z",
                "2024-01-01T01:00:00Z",
            ],
        ),
        // Strictly after: a start exactly on a fire time does not fire again.
        (
            "*/20 * * * *",
            "2024-01-01T00:20:00Z",
            &["2024-01-01T00:40:00Z"],
        ),
        (
            "0 9 * * MON-FRI",
            "2024-01-05T10:00:00Z",
            &["2024-01-08T09:00:00Z", "2024-01-09T09:00:00Z"],
        ),
        (
            "0 0 * * 7",
            "2024-01-01T00:00:00Z",
            &["2024-01-07T00:00:00Z", "2024-01-14T00:00:00Z"],
        ),
        (
            "0 12 * * 5-7",
            "2024-01-01T00:00:00Z",
            &[
                "2024-01-05T12:00:00Z",
                "2024-01-06T12:00:00Z",
                "2024-01-07T12:00:00Z",
                "2024-01-12T12:00:00Z",
            ],
        ),
        // Every 13th and every Friday.
        (
            "0 0 13 * FRI",
            "2024-09-01T00:00:00Z",
            &[
                "2024-09-06T00:00:00Z",
                "2024-09-13T00:00:00Z",
                "2024-09-20T00:00:00Z",
                "2024-09-27T00:00:00Z",
                "2024-10-04T00:00:00Z",
                "2024-10-11T00:00:00Z",
                "2024-10-13T00:00:00Z",
                "2024-10-18T00:00:00Z",
            ],
        ),
        (
            "0 0 1 * MON",
            "2024-01-01T00:00:00Z",
            &[
                "2024-01-08T00:00:00Z",
                "2024-01-15T00:00:00Z",
                "2024-01-22T00:00:00Z",
                "2024-01-29T00:00:00Z",
                "2024-02-01T00:00:00Z",
                "2024-02-05T00:00:00Z",
            ],
        ),
        // Odd days that are Mondays (AND, because day-of-month starts with `*`).
        (
            "0 0 */2 * MON",
            "2024-01-01T00:00:00Z",
            &[
                "2024-01-15T00:00:00Z",
                "2024-01-29T00:00:00Z",
                "2024-02-05T00:00:00Z",
            ],
        ),
        (
            "0 0 */10 * *",
            "2024-01-31T12:00:00Z",
            &[
                "2024-02-01T00:00:00Z",
                "2024-02-11T00:00:00Z",
                "2024-02-21T00:00:00Z",
                "2024-03-01T00:00:00Z",
            ],
        ),
        (
            "0 0 29 2 *",
            "2024-03-01T00:00:00Z",
            &["2028-02-29T00:00:00Z"],
        ),
        (
            "@monthly",
            "2024-01-31T12:00:00Z",
            &["2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"],
        ),
        ("@yearly", "2024-06-01T00:00:00Z", &["2025-01-01T00:00:00Z"]),
        ("@weekly", "2024-01-01T00:00:00Z", &["2024-01-07T00:00:00Z"]),
        (
            "@hourly",
            "2024-12-31T23:30:00Z",
            &["2025-01-01T00:00:00Z", "2025-01-01T01:00:00Z"],
        ),
        (
            "30 */6 * * *",
            "2024-01-01T00:00:00Z",
            &[
                "2024-01-01T00:30:00Z",
                "2024-01-01T06:30:00Z",
                "2024-01-01T12:30:00Z",
                "2024-01-01T18:30:00Z",
                "2024-01-02T00:30:00Z",
            ],
        ),
        (
            "*/15 * * * * *",
            "2024-01-01T00:00:00Z",
            &[
                "2024-01-01T00:00:15Z",
                "2024-01-01T00:00:30Z",
                "2024-01-01T00:00:45Z",
                "2024-01-01T00:01:00Z",
            ],
        ),
        (
            "15 10 1,15 JAN,jul *",
            "2024-01-01T11:00:00Z",
            &[
                "2024-01-15T10:15:00Z",
                "2024-07-01T10:15:00Z",
                "2024-07-15T10:15:00Z",
                "2025-01-01T10:15:00Z",
            ],
        ),
    ];
    for (expr, from, want) in table {
        assert_eq!(
            fires(expr, &UTC, from, want.len()),
            *want,
            "{expr} from {from}"
        );
    }
}

/// Classic cron's matching rule, written independently of the crate: a
/// time matches when second, minute, hour and month match, and the day
/// matches by AND if either day field starts with `*`, else by OR.
fn reference_day(f: &Fields, d: NaiveDate) -> bool {
    let dom = f.dom.has(d.day());
    let dow = f.dow.has(d.weekday().num_days_from_sunday());
    let day = if f.dom.star || f.dow.star {
        dom && dow
    } else {
        dom || dow
    };
    day && f.month.has(d.month())
}

#[test]
fn fire_times_equal_the_reference_matcher_over_whole_periods() {
    // (expression, days scanned from 2024-01-01): a year for the sparse ones
    // (every month, weekday and leap day), days for the dense ones.
    let table: &[(&str, i64)] = &[
        ("* * * * *", 2),
        ("*/20 * * * *", 10),
        ("5/15 9-17 * * *", 10),
        ("0 9 * * 1-5", 366),
        ("0 9 * * MON-FRI", 366),
        ("30 2 * * 0", 366),
        ("30 2 * * 7", 366),
        ("0 12 * * 5-7", 366),
        ("0 0 * * */2", 366),
        ("0 0 13 * FRI", 366),
        ("0 0 1 * MON", 366),
        ("0 0 */2 * MON", 366),
        ("0 0 1-7 * 1", 366),
        ("0 0 * * 1 ", 366),
        ("0 0 29 2 *", 366),
        ("0 0 31 * *", 366),
        ("0 6,18 1,15,31 JAN-MAR,dec *", 366),
        ("0 0 ? * 2", 366),
        ("@daily", 366),
        ("@weekly", 366),
        ("@monthly", 366),
        ("@yearly", 366),
        ("@hourly", 14),
        ("*/15 30 9 * * 1-5", 366),
    ];
    let start = NaiveDate::from_ymd_opt(2024, 1, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    for (expr, days) in table {
        let c = cron(expr);
        let end = start + chrono::Duration::days(*days);
        let mut want = Vec::new();
        let mut day = start.date();
        while day < end.date() {
            if reference_day(&c.fields, day) {
                let f = &c.fields;
                for h in f.hour.values() {
                    for m in f.minute.values() {
                        for sec in f.second.values() {
                            want.push(day.and_hms_opt(h, m, sec).unwrap());
                        }
                    }
                }
            }
            day = day.succ_opt().unwrap();
        }
        let mut got = Vec::new();
        let mut at = Utc.from_utc_datetime(&(start - chrono::Duration::seconds(1)));
        while let Some(next) = UTC.next_fire(&c, at) {
            if next.naive_utc() >= end {
                break;
            }
            got.push(next.naive_utc());
            at = next;
        }
        assert!(!want.is_empty(), "{expr}: nothing to compare");
        assert_eq!(got, want, "{expr}");
    }
}

#[test]
fn invalid_expressions_say_which_field_and_why() {
    let table: &[(&str, &str)] = &[
        (
            "61 * * * *",
            "the minute field `61`: 61 is out of range 0-59",
        ),
        ("* 24 * * *", "the hour field `24`: 24 is out of range 0-23"),
        (
            "0 0 0 * *",
            "the day-of-month field `0`: 0 is out of range 1-31",
        ),
        (
            "0 0 * 13 *",
            "the month field `13`: 13 is out of range 1-12",
        ),
        ("0 0 * * 8", "8 is out of range 0-7 (0 and 7 are Sunday)"),
        (
            "0 0 * * FRY",
            "`FRY` is not a number from 0 to 7 or a name (SUN, MON",
        ),
        ("*/0 * * * *", "step `0` is not a whole number above 0"),
        ("5-1 * * * *", "range `5-1` runs backwards"),
        ("1,,2 * * * *", "an empty list item"),
        (
            "? * * * *",
            "`?` is only allowed for day-of-month and day-of-week",
        ),
        ("0 0 L * *", "`L` is not a number from 1 to 31"),
        ("* * *", "has 3 fields: expected 5 fields"),
        ("0 0 0 0 * * * *", "has 8 fields"),
        ("", "empty schedule"),
        ("0 0 30 2 *", "never fires"),
        ("0 0 31 4,6 *", "never fires"),
        ("@reboot", "start `ooda daemon` at boot"),
        ("@fortnightly", "unknown macro `@fortnightly`"),
    ];
    for (expr, want) in table {
        let err = Cron::parse(expr).expect_err(expr);
        assert!(err.contains(want), "{expr}: {err}");
    }
}

#[test]
fn briefs_take_cron_or_an_interval_with_a_unit() {
    assert!(matches!(
        Schedule::parse("*/20 * * * *"),
        Ok(Schedule::Cron(_))
    ));
    assert!(matches!(Schedule::parse("@daily"), Ok(Schedule::Cron(_))));
    assert!(matches!(
        Schedule::parse("0 9 * * MON"),
        Ok(Schedule::Cron(_))
    ));
    match Schedule::parse("20m") {
        Ok(Schedule::Every(d)) => assert_eq!(d, Duration::from_secs(1200)),
        other => panic!("{other:?}"),
    }
    match Schedule::parse("@every 1h30m") {
        Ok(Schedule::Every(d)) => assert_eq!(d, Duration::from_secs(5400)),
        other => panic!("{other:?}"),
    }
    assert!(Schedule::parse("5").unwrap_err().contains("1 field"));
    assert!(
        Schedule::parse("20 minutes")
            .unwrap_err()
            .contains("or an interval such as `20m`")
    );
    assert!(
        Schedule::parse("0s")
            .unwrap_err()
            .contains("longer than zero")
    );
    assert!(
        Schedule::every("soon")
            .unwrap_err()
            .contains("not an interval")
    );
    assert_eq!(Schedule::parse("20m").unwrap().to_string(), "every 20m");
}

#[test]
fn an_interval_fires_at_start_then_every_interval() {
    let s = Schedule::every("20m").unwrap();
    let now = utc("2024-01-01T00:05:30Z");
    let got: Vec<_> = s
        .upcoming(now, &UTC, 3)
        .into_iter()
        .map(|t| t.to_rfc3339())
        .collect();
    assert_eq!(
        got,
        [
            "2024-01-01T00:05:30+00:00",
            "2024-01-01T00:25:30+00:00",
            "2024-01-01T00:45:30+00:00"
        ]
    );
}

#[test]
fn tz_names_an_iana_zone_or_falls_back_to_local_time() {
    assert_eq!(
        Zone::from_tz(Some("Europe/Berlin")),
        Zone::Named(Europe::Berlin)
    );
    assert_eq!(
        Zone::from_tz(Some(":America/New_York")),
        Zone::Named(America::New_York)
    );
    assert_eq!(Zone::from_tz(Some("UTC")), UTC);
    assert_eq!(Zone::from_tz(None), Zone::Local);
    assert_eq!(Zone::from_tz(Some("")), Zone::Local);
    assert_eq!(Zone::from_tz(Some("EST5EDT,M3.2.0,M11.1.0")), Zone::Local);
    let berlin = Zone::Named(Europe::Berlin);
    assert_eq!(
        fires("0 9 * * *", &berlin, "2024-01-01T00:00:00Z", 1),
        ["2024-01-01T08:00:00Z"]
    );
    assert_eq!(
        berlin.format(utc("2024-07-01T08:00:00Z")),
        "2024-07-01 10:00:00 +02:00"
    );
}

// DST. New York 2024: clocks jump 02:00 EST → 03:00 EDT on March 10 (07:00Z)
// and fall back 02:00 EDT → 01:00 EST on November 3 (06:00Z). Berlin 2024:
// 02:00 CET → 03:00 CEST on March 31 (01:00Z), 03:00 CEST → 02:00 CET on
// October 27 (01:00Z).

#[test]
fn dst_forward_a_fixed_time_in_the_skipped_hour_fires_once_when_clocks_jump() {
    let ny = Zone::Named(America::New_York);
    assert_eq!(
        fires("30 2 * * *", &ny, "2024-03-09T00:00:00Z", 3),
        [
            "2024-03-09T07:30:00Z", // 02:30 EST
            "2024-03-10T07:00:00Z", // 03:00 EDT: 02:30 did not exist
            "2024-03-11T06:30:00Z", // 02:30 EDT
        ]
    );
    let berlin = Zone::Named(Europe::Berlin);
    assert_eq!(
        fires("15 2 * * *", &berlin, "2024-03-30T12:00:00Z", 2),
        ["2024-03-31T01:00:00Z", "2024-04-01T00:15:00Z"]
    );
    // Two fixed times in the gap coalesce into one tick.
    assert_eq!(
        fires("10,40 2 * * *", &ny, "2024-03-10T06:00:00Z", 2),
        ["2024-03-10T07:00:00Z", "2024-03-11T06:10:00Z"]
    );
}

#[test]
fn dst_forward_wall_clock_schedules_skip_the_missing_times() {
    let ny = Zone::Named(America::New_York);
    assert_eq!(
        fires("*/20 * * * *", &ny, "2024-03-10T06:30:00Z", 3),
        [
            "2024-03-10T06:40:00Z", // 01:40 EST
            "2024-03-10T07:00:00Z", // 03:00 EDT, 20 real minutes later
            "2024-03-10T07:20:00Z",
        ]
    );
    assert_eq!(
        fires("@hourly", &ny, "2024-03-10T05:30:00Z", 3),
        [
            "2024-03-10T06:00:00Z", // 01:00 EST
            "2024-03-10T07:00:00Z", // 03:00 EDT
            "2024-03-10T08:00:00Z",
        ]
    );
}

#[test]
fn dst_back_a_fixed_time_in_the_repeated_hour_fires_only_the_first_time() {
    let ny = Zone::Named(America::New_York);
    assert_eq!(
        fires("30 1 * * *", &ny, "2024-11-02T00:00:00Z", 3),
        [
            "2024-11-02T05:30:00Z", // 01:30 EDT
            "2024-11-03T05:30:00Z", // 01:30 EDT; 01:30 EST (06:30Z) is skipped
            "2024-11-04T06:30:00Z", // 01:30 EST
        ]
    );
    // Starting inside the repeated hour, after the first 01:30, waits a day.
    assert_eq!(
        fires("30 1 * * *", &ny, "2024-11-03T06:10:00Z", 1),
        ["2024-11-04T06:30:00Z"]
    );
    let berlin = Zone::Named(Europe::Berlin);
    assert_eq!(
        fires("30 2 * * *", &berlin, "2024-10-26T12:00:00Z", 2),
        ["2024-10-27T00:30:00Z", "2024-10-28T01:30:00Z"]
    );
}

#[test]
fn dst_back_wall_clock_schedules_fire_in_both_passes_in_time_order() {
    let ny = Zone::Named(America::New_York);
    assert_eq!(
        fires("*/20 * * * *", &ny, "2024-11-03T04:50:00Z", 7),
        [
            "2024-11-03T05:00:00Z", // 01:00 EDT
            "2024-11-03T05:20:00Z",
            "2024-11-03T05:40:00Z",
            "2024-11-03T06:00:00Z", // 01:00 EST
            "2024-11-03T06:20:00Z",
            "2024-11-03T06:40:00Z",
            "2024-11-03T07:00:00Z", // 02:00 EST
        ]
    );
    // From inside the second pass, the next tick is the next real 20 minutes.
    assert_eq!(
        fires("*/20 * * * *", &ny, "2024-11-03T06:05:00Z", 1),
        ["2024-11-03T06:20:00Z"]
    );
    // And from the end of the first pass, the second pass is not skipped.
    assert_eq!(
        fires("*/20 * * * *", &ny, "2024-11-03T05:45:00Z", 1),
        ["2024-11-03T06:00:00Z"]
    );
    assert_eq!(
        fires("@hourly", &ny, "2024-11-03T04:30:00Z", 3),
        [
            "2024-11-03T05:00:00Z",
            "2024-11-03T06:00:00Z",
            "2024-11-03T07:00:00Z",
        ]
    );
}

#[test]
fn dst_wall_clock_schedules_stay_evenly_spaced_across_changes() {
    // Every 20 minutes through a week around each change, in two DST zones:
    // always 20 real minutes apart.
    for (zone, changes) in [
        (
            Zone::Named(America::New_York),
            ["2024-03-10T07:00:00Z", "2024-11-03T06:00:00Z"],
        ),
        (
            Zone::Named(Europe::Berlin),
            ["2024-03-31T01:00:00Z", "2024-10-27T01:00:00Z"],
        ),
    ] {
        let c = cron("*/20 * * * *");
        for change in changes {
            let mut t = utc(change) - chrono::Duration::days(3);
            let end = utc(change) + chrono::Duration::days(3);
            while t < end {
                let next = zone.next_fire(&c, t).unwrap();
                assert_eq!((next - t).num_minutes(), 20, "{zone:?} after {t}");
                t = next;
            }
        }
    }
}

#[test]
fn describe_lists_the_translation_and_five_fire_times() {
    let text = describe("0 9 * * MON-FRI", utc("2024-01-05T10:00:00Z"), &UTC).unwrap();
    assert_eq!(
        text,
        "  schedule    `0 9 * * MON-FRI` in UTC (cron crate: `0 0 9 * * 2-6`)\n\
         \x20 next fires  Mon 2024-01-08 09:00:00 +00:00\n\
         \x20             Tue 2024-01-09 09:00:00 +00:00\n\
         \x20             Wed 2024-01-10 09:00:00 +00:00\n\
         \x20             Thu 2024-01-11 09:00:00 +00:00\n\
         \x20             Fri 2024-01-12 09:00:00 +00:00\n"
    );
    let text = describe("0 0 13 * FRI", utc("2024-09-01T00:00:00Z"), &UTC).unwrap();
    assert!(
        text.contains("(cron crate: `0 0 0 13 * *` or `0 0 0 * * 6`)"),
        "{text}"
    );
    assert!(describe("61 * * * *", Utc::now(), &UTC).is_err());
}
