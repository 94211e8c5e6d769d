//! When a scheduled loop ticks: cron expressions as users write
//! them, intervals, the time zone, and the next fire time.
//!
//! Users write crontab syntax: five fields (minute hour day-of-month month
//! day-of-week), 0 and 7 both Sunday, names, lists, ranges, steps, `@daily`.
//! The `cron` crate computes fire times well but speaks a different dialect: it
//! wants a seconds field, numbers weekdays 1 = Sunday … 7 = Saturday, and
//! combines a restricted day-of-month with a restricted day-of-week by AND,
//! where cron fires when *either* matches (`0 0 13 * FRI` is every 13th and
//! every Friday, not Friday the 13th). So expressions are parsed here, checked
//! with messages a person can act on, and translated: every field becomes an
//! explicit list in the crate's numbering, and the day-OR case becomes two
//! crate expressions whose fire times are merged. The crate never sees user
//! text, so its dialect cannot leak into what a schedule means.
//!
//! Time zone: the local zone by default; `TZ` is respected (an IANA name is
//! resolved with the zone database built into the binary, so it works on
//! machines without tzdata). Daylight saving time follows classic cron
//! (Vixie cron, cronie), because that is what a crontab user expects:
//!
//! - An expression whose minute or hour field starts with `*` (`*/20 * * * *`,
//!   `@hourly`) follows the wall clock: when clocks go forward, the skipped
//!   times do not happen; when they go back, the repeated times fire again. In
//!   both cases the ticks stay the usual real-time distance apart.
//! - An expression with a fixed time of day (`30 2 * * *`) fires once per
//!   matching day: a time inside the skipped hour fires at the end of the
//!   jump, a time inside the repeated hour fires only the first time.
//!
//! Fire times are computed on naive wall-clock times (the crate run in UTC,
//! where nothing is skipped or repeated) and then mapped to instants by the
//! rules above, so the crate's own handling of ambiguous local times (which
//! yields instants out of order) is never relied on.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeZone, Timelike, Utc};

use crate::validate::units::{format_duration, parse_duration};

#[cfg(test)]
mod tests;

/// How often a loop ticks.
#[derive(Clone, Debug)]
pub(crate) enum Schedule {
    /// One tick at start, then one per interval.
    Every(Duration),
    Cron(Cron),
}

/// An interval for `--every` (`ooda run`, `ooda submit`): a duration
/// longer than zero.
pub(crate) fn interval(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text).ok_or_else(|| {
        format!(
            "`{}` is not an interval (examples: `20m`, `1h30m`, `90s`)",
            text.trim()
        )
    })?;
    if d.is_zero() {
        return Err(
            "an interval must be longer than zero; without a schedule iterations run back to back"
                .into(),
        );
    }
    Ok(d)
}

impl Schedule {
    /// A Brief's `schedule:` value: a cron expression, or an interval with a
    /// unit (`20m`, `@every 20m`). A bare number is refused: `5` is neither a
    /// crontab line nor clearly an interval.
    pub(crate) fn parse(text: &str) -> Result<Schedule, String> {
        let t = text.trim();
        if let Some(rest) = t.strip_prefix("@every") {
            return Schedule::every(rest);
        }
        if t.chars().any(|c| c.is_ascii_alphabetic()) && parse_duration(t).is_some() {
            return Schedule::every(t);
        }
        Cron::parse(t).map(Schedule::Cron)
    }

    /// `--every D`: any duration ooda accepts elsewhere (`20m`, `1h30m`, `90s`).
    pub(crate) fn every(text: &str) -> Result<Schedule, String> {
        interval(text).map(Schedule::Every)
    }

    /// `--cron E`.
    pub(crate) fn cron(text: &str) -> Result<Schedule, String> {
        Cron::parse(text).map(Schedule::Cron)
    }

    /// The first fire time of a loop started at `now`: at once for an
    /// interval, the next matching time for cron (a fire time missed while
    /// nothing ran is not made up for).
    pub(crate) fn first(&self, now: DateTime<Utc>, zone: &Zone) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Every(_) => Some(now),
            Schedule::Cron(c) => zone.next_fire(c, now),
        }
    }

    /// The fire time after `t` (itself a fire time, or any instant for cron).
    pub(crate) fn next_after(&self, t: DateTime<Utc>, zone: &Zone) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Every(d) => chrono::Duration::from_std(*d).ok().map(|d| t + d),
            Schedule::Cron(c) => zone.next_fire(c, t),
        }
    }

    /// The next `n` fire times of a loop started at `now`.
    pub(crate) fn upcoming(&self, now: DateTime<Utc>, zone: &Zone, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(n);
        let mut next = self.first(now, zone);
        while let Some(t) = next {
            if out.len() == n {
                break;
            }
            out.push(t);
            next = self.next_after(t, zone);
        }
        out
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Every(d) => write!(f, "every {}", format_duration(*d)),
            Schedule::Cron(c) => f.write_str(&c.source),
        }
    }
}

/// A parsed crontab expression and its translation for the `cron` crate.
#[derive(Clone, Debug)]
pub(crate) struct Cron {
    source: String,
    fields: Fields,
    /// In the crate's syntax: two when day-of-month and day-of-week are both
    /// restricted (their fire times are merged), else one.
    translated: Vec<String>,
    compiled: Vec<cron::Schedule>,
}

/// The six fields, as sets of values in crontab numbering (weekday 0 = Sunday).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fields {
    second: Field,
    minute: Field,
    hour: Field,
    dom: Field,
    month: Field,
    dow: Field,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    /// Bit v set when value v matches.
    bits: u64,
    /// Written starting with `*` (or `?`). Classic cron keys two rules on this
    /// rather than on the values: day-of-month/day-of-week combine by AND when
    /// either is starred, else by OR; and starred minute or hour fields make an
    /// expression follow the wall clock across DST changes.
    star: bool,
}

impl Field {
    fn has(&self, v: u32) -> bool {
        v < 64 && self.bits & (1 << v) != 0
    }

    fn values(&self) -> impl Iterator<Item = u32> + '_ {
        (0..64).filter(|v| self.has(*v))
    }
}

struct Spec {
    name: &'static str,
    min: u32,
    max: u32,
    /// Names for min, min+1, ….
    names: &'static [&'static str],
}

const SECOND: Spec = Spec {
    name: "second",
    min: 0,
    max: 59,
    names: &[],
};
const MINUTE: Spec = Spec {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Spec = Spec {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Spec = Spec {
    name: "day-of-month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Spec = Spec {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ],
};
/// 7 is accepted as Sunday and folded into 0 after parsing.
const DOW: Spec = Spec {
    name: "day-of-week",
    min: 0,
    max: 7,
    names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
};

const FIELD_HELP: &str = "5 fields `minute hour day-of-month month day-of-week` (e.g. `*/20 * * * *`), 6 with a leading seconds field, or a macro such as `@daily`; or an interval such as `20m`";

impl Cron {
    pub(crate) fn parse(text: &str) -> Result<Cron, String> {
        let source = text.trim().to_string();
        let expanded = expand_macro(&source)?;
        let parts: Vec<&str> = expanded.split_whitespace().collect();
        let (second, rest) = match parts.len() {
            5 => ("0", &parts[..]),
            6 => (parts[0], &parts[1..]),
            0 => return Err(format!("empty schedule: expected {FIELD_HELP}")),
            n => {
                return Err(format!(
                    "`{source}` has {n} field{}: expected {FIELD_HELP}",
                    if n == 1 { "" } else { "s" }
                ));
            }
        };
        let mut dow = parse_field(rest[4], &DOW)?;
        if dow.has(7) {
            dow.bits = (dow.bits & !(1 << 7)) | 1;
        }
        let fields = Fields {
            second: parse_field(second, &SECOND)?,
            minute: parse_field(rest[0], &MINUTE)?,
            hour: parse_field(rest[1], &HOUR)?,
            dom: parse_field(rest[2], &DOM)?,
            month: parse_field(rest[3], &MONTH)?,
            dow,
        };
        let translated = translate(&fields);
        let compiled = translated
            .iter()
            .map(|e| {
                cron::Schedule::from_str(e).map_err(|err| {
                    format!("internal: `{source}` translated to `{e}`, which the cron crate refuses: {err}")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cron = Cron {
            source,
            fields,
            translated,
            compiled,
        };
        // Searched from a fixed date so validation does not depend on today:
        // 28 years hold every combination of leap day and weekday.
        let probe = Utc.with_ymd_and_hms(2001, 1, 1, 0, 0, 0).single();
        if probe.and_then(|p| cron.next_naive(p.naive_utc())).is_none() {
            return Err(format!(
                "`{}` never fires: no date has day-of-month {} in month {}",
                cron.source,
                list(cron.fields.dom.values()),
                list(cron.fields.month.values())
            ));
        }
        Ok(cron)
    }

    /// The text as the user wrote it.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    /// The expression(s) handed to the `cron` crate.
    pub(crate) fn translated(&self) -> &[String] {
        &self.translated
    }

    /// Follows the wall clock across DST changes (see the module docs).
    pub(crate) fn follows_wall_clock(&self) -> bool {
        self.fields.minute.star || self.fields.hour.star
    }

    /// The first matching wall-clock time strictly after `after` (to the second).
    fn next_naive(&self, after: NaiveDateTime) -> Option<NaiveDateTime> {
        let t = Utc.from_utc_datetime(&after);
        self.compiled
            .iter()
            .filter_map(|s| s.after(&t).next())
            .min()
            .map(|d| d.naive_utc())
    }

    /// The instants at which wall-clock time `n` fires in `tz` (module docs).
    fn instants<Z: TimeZone>(&self, n: NaiveDateTime, tz: &Z) -> Vec<DateTime<Utc>> {
        match tz.from_local_datetime(&n) {
            LocalResult::Single(t) => vec![t.with_timezone(&Utc)],
            LocalResult::Ambiguous(a, b) => {
                let (a, b) = (a.with_timezone(&Utc), b.with_timezone(&Utc));
                if self.follows_wall_clock() {
                    vec![a.min(b), a.max(b)]
                } else {
                    vec![a.min(b)]
                }
            }
            LocalResult::None if self.follows_wall_clock() => Vec::new(),
            LocalResult::None => gap_end(n, tz).into_iter().collect(),
        }
    }

    /// The first fire time strictly after `after`, in zone `tz`.
    fn next_in<Z: TimeZone>(&self, after: DateTime<Utc>, tz: &Z) -> Option<DateTime<Utc>> {
        let offset = |t: DateTime<Utc>| tz.offset_from_utc_datetime(&t.naive_utc()).fix();
        // No offset change within LOOK of t: wall time and real time move together there.
        let steady = |t: DateTime<Utc>| {
            let o = offset(t);
            offset(t - LOOK) == o && offset(t + LOOK) == o
        };
        let local = after.with_timezone(tz).naive_local();
        // When clocks are about to go back, wall times just before `local` happen again
        // after `after`: start the search early enough to see them.
        let mut cursor = if steady(after) { local } else { local - LOOK };
        let mut best: Option<(DateTime<Utc>, NaiveDateTime)> = None;
        while let Some(n) = self.next_naive(cursor) {
            if let Some((b, bn)) = best
                && (steady(b) || n > bn + LOOK)
            {
                // Later wall times can map to earlier instants only across a
                // backward offset change, which `steady`/LOOK have ruled out.
                break;
            }
            for i in self.instants(n, tz) {
                if i > after && best.is_none_or(|(b, _)| i < b) {
                    best = Some((i, n));
                }
            }
            cursor = n;
        }
        best.map(|(b, _)| b)
    }
}

/// Longer than any DST shift (2 h at most in the tz database since 1996).
const LOOK: chrono::Duration = chrono::Duration::hours(4);

/// The instant clocks jumped over wall time `n` (the first existing minute after it).
fn gap_end<Z: TimeZone>(n: NaiveDateTime, tz: &Z) -> Option<DateTime<Utc>> {
    let mut t = n.with_second(0)?.with_nanosecond(0)?;
    for _ in 0..48 * 60 {
        t += chrono::Duration::minutes(1);
        if let Some(i) = tz.from_local_datetime(&t).earliest() {
            return Some(i.with_timezone(&Utc));
        }
    }
    None
}

fn expand_macro(text: &str) -> Result<String, String> {
    if !text.starts_with('@') {
        return Ok(text.to_string());
    }
    Ok(match text.to_ascii_lowercase().as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        "@reboot" => {
            return Err("`@reboot` is not a schedule ooda can repeat: start `ooda daemon` at boot (a systemd user service, or an `@reboot` crontab line) instead".into());
        }
        _ => {
            return Err(format!(
                "unknown macro `{text}`: known are @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly and @every <interval>"
            ));
        }
    }
    .to_string())
}

fn parse_field(text: &str, spec: &Spec) -> Result<Field, String> {
    let star = text.starts_with('*') || text == "?";
    if text == "?" && !matches!(spec.name, "day-of-month" | "day-of-week") {
        return Err(format!(
            "the {} field `?`: `?` is only allowed for day-of-month and day-of-week",
            spec.name
        ));
    }
    let mut bits = 0u64;
    for item in text.split(',') {
        let bad = |why: String| format!("the {} field `{text}`: {why}", spec.name);
        if item.is_empty() {
            return Err(bad("an empty list item".into()));
        }
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => {
                let step = s
                    .parse::<u32>()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| bad(format!("step `{s}` is not a whole number above 0")))?;
                (r, Some(step))
            }
            None => (item, None),
        };
        let (lo, hi) = if range == "*" || range == "?" {
            (spec.min, spec.max)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (value(a, spec).map_err(&bad)?, value(b, spec).map_err(&bad)?);
            if a > b {
                return Err(bad(format!(
                    "range `{range}` runs backwards; write it as two ranges, e.g. `{a}-{},{}-{b}`",
                    spec.max, spec.min
                )));
            }
            (a, b)
        } else {
            let v = value(range, spec).map_err(&bad)?;
            // `5/15` means from 5 to the end in steps of 15, as in cronie.
            (v, if step.is_some() { spec.max } else { v })
        };
        for v in (lo..=hi).step_by(step.unwrap_or(1) as usize) {
            bits |= 1 << v;
        }
    }
    Ok(Field { bits, star })
}

fn value(text: &str, spec: &Spec) -> Result<u32, String> {
    if let Some(i) = spec.names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return Ok(spec.min + i as u32);
    }
    let v: u32 = text.parse().map_err(|_| {
        let names = if spec.names.is_empty() {
            String::new()
        } else {
            format!(" or a name ({})", spec.names.join(", "))
        };
        format!(
            "`{text}` is not a number from {} to {}{names}",
            spec.min, spec.max
        )
    })?;
    if v < spec.min || v > spec.max {
        return Err(format!(
            "{v} is out of range {}-{}{}",
            spec.min,
            spec.max,
            if spec.name == "day-of-week" {
                " (0 and 7 are Sunday)"
            } else {
                ""
            }
        ));
    }
    Ok(v)
}

/// The crate's expression(s) for the fields: seconds first, weekdays 1 = Sunday.
fn translate(f: &Fields) -> Vec<String> {
    let field = |fl: &Field, spec: &Spec, shift: u32| {
        let full = (spec.min
            ..=spec
                .max
                .min(if spec.name == "day-of-week" { 6 } else { 63 }))
            .all(|v| fl.has(v));
        if full {
            "*".to_string()
        } else {
            list(fl.values().map(|v| v + shift))
        }
    };
    let head = format!(
        "{} {} {}",
        field(&f.second, &SECOND, 0),
        field(&f.minute, &MINUTE, 0),
        field(&f.hour, &HOUR, 0)
    );
    let (dom, month, dow) = (
        field(&f.dom, &DOM, 0),
        field(&f.month, &MONTH, 0),
        field(&f.dow, &DOW, 1),
    );
    if f.dom.star || f.dow.star {
        vec![format!("{head} {dom} {month} {dow}")]
    } else {
        vec![
            format!("{head} {dom} {month} *"),
            format!("{head} * {month} {dow}"),
        ]
    }
}

/// `0,20,40`, `9-17`, `1,3-5`: runs of three or more become ranges.
fn list(values: impl Iterator<Item = u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    let flush = |run: (u32, u32), parts: &mut Vec<String>| {
        let (a, b) = run;
        match b - a {
            0 => parts.push(a.to_string()),
            1 => parts.push(format!("{a},{b}")),
            _ => parts.push(format!("{a}-{b}")),
        }
    };
    for v in values {
        run = match run {
            Some((a, b)) if v == b + 1 => Some((a, v)),
            Some(r) => {
                flush(r, &mut parts);
                Some((v, v))
            }
            None => Some((v, v)),
        };
    }
    if let Some(r) = run {
        flush(r, &mut parts);
    }
    parts.join(",")
}

/// The time zone fire times are computed and shown in.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Zone {
    /// The system's local time (`/etc/localtime`, or a `TZ` the zone database
    /// built into ooda does not know, such as a POSIX rule string).
    Local,
    Named(chrono_tz::Tz),
}

impl Zone {
    /// `TZ` if it names an IANA zone (a leading `:` is allowed), else local time.
    pub(crate) fn from_env() -> Zone {
        Zone::from_tz(std::env::var("TZ").ok().as_deref())
    }

    pub(crate) fn from_tz(tz: Option<&str>) -> Zone {
        tz.map(|t| t.trim().trim_start_matches(':'))
            .filter(|t| !t.is_empty())
            .and_then(|t| t.parse::<chrono_tz::Tz>().ok())
            .map(Zone::Named)
            .unwrap_or(Zone::Local)
    }

    pub(crate) fn name(&self) -> String {
        match self {
            Zone::Named(tz) => tz.name().to_string(),
            Zone::Local => local_zone_name(),
        }
    }

    pub(crate) fn next_fire(&self, cron: &Cron, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Zone::Local => cron.next_in(after, &chrono::Local),
            Zone::Named(tz) => cron.next_in(after, tz),
        }
    }

    /// `2024-03-10 03:00:00 -04:00`: the offset keeps DST days unambiguous.
    pub(crate) fn format(&self, t: DateTime<Utc>) -> String {
        self.format_with(t, "%Y-%m-%d %H:%M:%S %:z")
    }

    /// With the weekday, for lists of fire times: `Sun 2024-03-10 03:00:00 -04:00`.
    pub(crate) fn format_day(&self, t: DateTime<Utc>) -> String {
        self.format_with(t, "%a %Y-%m-%d %H:%M:%S %:z")
    }

    fn format_with(&self, t: DateTime<Utc>, fmt: &str) -> String {
        match self {
            Zone::Local => t.with_timezone(&chrono::Local).format(fmt).to_string(),
            Zone::Named(tz) => t.with_timezone(tz).format(fmt).to_string(),
        }
    }
}

/// A readable name for the system zone, for messages only.
fn local_zone_name() -> String {
    if let Ok(tz) = std::env::var("TZ")
        && !tz.trim().is_empty()
    {
        return tz.trim().trim_start_matches(':').to_string();
    }
    if let Ok(target) = std::fs::read_link("/etc/localtime") {
        let s = target.to_string_lossy();
        if let Some((_, name)) = s.split_once("zoneinfo/") {
            return name.to_string();
        }
    }
    "local time".to_string()
}

/// `ooda check`'s lines for a Brief's `schedule`: the translation and the next five fire times.
pub(crate) fn describe(text: &str, now: DateTime<Utc>, zone: &Zone) -> Result<String, String> {
    let schedule = Schedule::parse(text)?;
    let mut s = String::new();
    match &schedule {
        Schedule::Every(_) => {
            s.push_str(&format!(
                "  schedule    {schedule}: the first tick when the loop starts (times in {})\n",
                zone.name()
            ));
        }
        Schedule::Cron(c) => {
            s.push_str(&format!(
                "  schedule    `{}` in {} (cron crate: `{}`)\n",
                c.source(),
                zone.name(),
                c.translated().join("` or `")
            ));
        }
    }
    for (i, t) in schedule.upcoming(now, zone, 5).into_iter().enumerate() {
        let label = if i == 0 {
            "  next fires  "
        } else {
            "              "
        };
        s.push_str(&format!("{label}{}\n", zone.format_day(t)));
    }
    Ok(s)
}
