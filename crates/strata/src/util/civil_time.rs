//! Calendar fields of a Unix time in UTC, without a time-zone database:
//! what the LOG's timestamps and the tools' human-readable times print.

/// A Unix time broken into UTC calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    pub year: i64,
    /// 1..=12.
    pub month: u32,
    /// 1..=31.
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// 0 = Sunday .. 6 = Saturday.
    pub weekday: u32,
}

impl CivilTime {
    /// The UTC fields of `secs` seconds since the epoch (negative: before).
    pub fn from_unix(secs: i64) -> CivilTime {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        CivilTime {
            year,
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: ((rem / 60) % 60) as u32,
            second: (rem % 60) as u32,
            // 1970-01-01 was a Thursday.
            weekday: (days + 4).rem_euclid(7) as u32,
        }
    }

    /// C's `strftime("%c")` in the C locale: `Thu Jan  1 00:00:00 1970`.
    pub fn ctime(&self) -> String {
        const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        format!(
            "{} {} {:>2} {:02}:{:02}:{:02} {}",
            DAYS[self.weekday as usize],
            MONTHS[self.month as usize - 1],
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.year
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_times() {
        assert_eq!(CivilTime::from_unix(0).ctime(), "Thu Jan  1 00:00:00 1970");
        // DBWithTTL's kMinTimestamp and kMaxTimestamp.
        assert_eq!(
            CivilTime::from_unix(1_368_146_402).ctime(),
            "Fri May 10 00:40:02 2013"
        );
        assert_eq!(
            CivilTime::from_unix(2_147_483_647).ctime(),
            "Tue Jan 19 03:14:07 2038"
        );
        assert_eq!(
            CivilTime::from_unix(951_782_400).ctime(),
            "Tue Feb 29 00:00:00 2000"
        );
        assert_eq!(CivilTime::from_unix(-1).ctime(), "Wed Dec 31 23:59:59 1969");
    }
}
