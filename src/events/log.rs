//! The log of long-running modes (`run --every/--cron`, `daemon`).
//!
//! A daemon's stderr ends up in a journal or a file that someone reads the
//! next morning, interleaving several Briefs. So every line carries the time
//! (in the schedule's zone, with its UTC offset, so lines around a DST change
//! stay in order for a reader) and the Brief's name, and is written with one
//! call so concurrent loops never split each other's lines. Events in
//! `events.jsonl` remain the machine-readable record; this is the human one.

use std::io::Write;

use chrono::Utc;

use crate::validate::cron::Zone;

#[derive(Clone, Debug)]
pub(crate) struct Log {
    zone: Zone,
    quiet: bool,
    /// One JSON object a line (`--json`), for a log shipper.
    json: bool,
}

impl Log {
    pub(crate) fn new(zone: Zone, quiet: bool) -> Log {
        Log {
            zone,
            quiet,
            json: false,
        }
    }

    /// `{"time", "brief", "message"}` lines instead of text.
    #[must_use]
    pub(crate) fn json(mut self, json: bool) -> Log {
        self.json = json;
        self
    }

    pub(crate) fn zone(&self) -> &Zone {
        &self.zone
    }

    /// `2024-03-10 03:00:00 -04:00 [latency] msg`; suppressed by `-q`.
    pub(crate) fn info(&self, brief: Option<&str>, msg: &str) {
        if !self.quiet {
            self.write(brief, msg);
        }
    }

    /// Problems a person must act on are shown even with `-q`.
    pub(crate) fn error(&self, brief: Option<&str>, msg: &str) {
        self.write(brief, msg);
    }

    /// For the phase machine's progress, whose lines already start with
    /// `[brief]`; a measurement's live state is logged as a line too.
    pub(crate) fn progress(&self) -> crate::events::Print {
        let log = self.clone();
        Box::new(move |s: &crate::events::Shown| log.line(s.text()))
    }

    /// One line that already names its Brief; suppressed by `-q`.
    pub(crate) fn line(&self, msg: &str) {
        if !self.quiet {
            self.write(None, msg);
        }
    }

    fn write(&self, brief: Option<&str>, msg: &str) {
        let line = self.render(brief, msg);
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    /// One entry of the log, its line break included.
    fn render(&self, brief: Option<&str>, msg: &str) -> String {
        if self.json {
            let mut line = serde_json::json!({
                "time": self.zone.format(Utc::now()),
                "brief": brief,
                "message": msg,
            })
            .to_string();
            line.push('\n');
            return line;
        }
        let mut line = self.zone.format(Utc::now());
        if let Some(b) = brief {
            line.push_str(&format!(" [{b}]"));
        }
        // Continuation lines (a list of Brief problems) are indented under the first.
        for (i, part) in msg.lines().enumerate() {
            line.push_str(if i == 0 { " " } else { "\n    " });
            line.push_str(part);
        }
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_log_is_one_object_a_line_whatever_the_message_holds() {
        let log = Log::new(Zone::from_env(), false).json(true);
        let line = log.render(Some("latency"), "two\nlines \"quoted\"");
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["brief"], "latency");
        assert_eq!(v["message"], "two\nlines \"quoted\"");
        let text = Log::new(Zone::from_env(), false).render(None, "a\nb");
        assert!(text.ends_with(" a\n    b\n"), "{text}");
    }
}
