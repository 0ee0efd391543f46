package agentcli

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// MaxQuotaWait bounds a parsed reset time: a banner naming a time further ahead than this is
// taken as unreadable (the default wait applies), not as a week-long park.
const MaxQuotaWait = 7 * 24 * time.Hour

// DefaultQuotaWait is the park time when a quota banner names no reset time. The environment
// variable MULLIGAN_QUOTA_DEFAULT_WAIT (a duration: 90s, 20m, 1h) overrides it.
const DefaultQuotaWait = 30 * time.Minute

// QuotaDefaultWait returns the configured wait for a quota wall without a reset time.
func QuotaDefaultWait() time.Duration {
	if v := strings.TrimSpace(os.Getenv("MULLIGAN_QUOTA_DEFAULT_WAIT")); v != "" {
		if d, err := taskfile.ParseDuration(v); err == nil && d > 0 {
			return min(d, MaxQuotaWait)
		}
	}
	return DefaultQuotaWait
}

var (
	retryAfterHdrRe = lazyre.New(`(?i)retry-after"?\s*[:=]\s*"?(\d{1,9})\b`)
	// "in 2h 30m", "after 45 seconds", "in 1 hour and 5 minutes", "retry in 27.5s", "retryDelay": "27s"
	relRe     = lazyre.New(`(?i)(?:\b(?:in|after|wait|retryDelay"?\s*:\s*")\s*)((?:\d+(?:\.\d+)?\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+)`)
	relPartRe = lazyre.New(`(?i)(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`)
	// "resets at 3pm", "resets 15:00 (UTC)", "reset at 3:30 PM (America/New_York)", "try again at 5:05 PM"
	clockRe = lazyre.New(`(?i)\b(?:resets?|again|until|after)\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?(?:\s*\(?\s*([A-Za-z][A-Za-z0-9_+\-/]*)\s*\)?)?`)
	// "try again at Aug 8th, 2026 12:30 PM", "resets Dec 29 10:15 PM": codex names a date and a
	// clock time in the machine's local time, without a zone (codex-rs format_retry_timestamp:
	// resets_at in chrono's Local, the date only when it is not today); codex runs on this
	// machine with mulligan's TZ, so now's zone (time.Local) reads it
	dateRe = lazyre.New(`(?i)\b(?:again|resets?|until)\s+(?:at\s+|on\s+)?(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s*(\d{4})?,?\s*(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?`)
	// a unix timestamp in seconds (10 digits) or milliseconds (13), standing alone or after '|'
	unixRe = lazyre.New(`(?:^|[^0-9.])(1\d{9}|1\d{12})(?:$|[^0-9.])`)
)

// ParseQuotaReset reads when a quota wall lifts from a banner's text, relative to now. It
// understands Retry-After headers, relative durations ("in 2h 30m", "after 45 seconds"), clock
// times with or without a zone ("resets at 3pm", "resets 15:00 (UTC)") and unix timestamps. The
// result is never before now and never more than MaxQuotaWait after it; ok is false when the text
// names no usable time.
func ParseQuotaReset(text string, now time.Time) (time.Time, bool) {
	if len(text) > 16<<10 {
		text = text[len(text)-16<<10:]
	}
	ok := func(t time.Time) (time.Time, bool) {
		if t.Before(now) {
			t = now
		}
		if t.Sub(now) > MaxQuotaWait {
			return time.Time{}, false
		}
		return t, true
	}
	if dailyQuotaRe.MatchString(text) {
		// gemini's per-day quota resets at midnight Pacific time, whatever delay the API's
		// message suggests for the per-minute limit beside it
		return ok(nextMidnight(now, pacific()))
	}
	if m := retryAfterHdrRe.FindStringSubmatch(text); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil && n <= int64(MaxQuotaWait/time.Second) {
			return ok(now.Add(time.Duration(n) * time.Second))
		}
	}
	if m := relRe.FindStringSubmatch(text); m != nil {
		var d time.Duration
		for _, p := range relPartRe.FindAllStringSubmatch(m[1], -1) {
			v, err := strconv.ParseFloat(p[1], 64)
			if err != nil || v > 1e6 {
				d = MaxQuotaWait + time.Second
				break
			}
			d += time.Duration(v * float64(unitOf(p[2])))
		}
		if d > 0 {
			return ok(now.Add(d))
		}
	}
	if m := unixRe.FindStringSubmatch(text); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		var t time.Time
		if len(m[1]) == 13 {
			t = time.UnixMilli(n)
		} else {
			t = time.Unix(n, 0)
		}
		if t.After(now.Add(-time.Minute)) {
			return ok(t)
		}
	}
	if m := dateRe.FindStringSubmatch(text); m != nil {
		if t, good := dateTime(m, now); good {
			return ok(t)
		}
	}
	for _, m := range clockRe.FindAllStringSubmatch(text, -1) {
		if t, good := clockTime(m, now); good {
			return ok(t)
		}
	}
	return time.Time{}, false
}

// dailyQuotaRe is gemini's TerminalQuotaError for a per-day quota.
var dailyQuotaRe = lazyre.New(`(?i)exhausted your daily quota`)

// pacific is America/Los_Angeles, where Google's daily quotas reset; UTC-8 where the system has
// no zone data (an hour late in summer).
func pacific() *time.Location {
	if l, err := time.LoadLocation("America/Los_Angeles"); err == nil {
		return l
	}
	return time.FixedZone("PST", -8*60*60)
}

// nextMidnight is the first midnight in loc after now.
func nextMidnight(now time.Time, loc *time.Location) time.Time {
	l := now.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, loc)
}

func unitOf(u string) time.Duration {
	switch strings.ToLower(u)[0] {
	case 'd':
		return 24 * time.Hour
	case 'h':
		return time.Hour
	case 'm':
		return time.Minute
	}
	return time.Second
}

// clockTime is the next moment at or after now when the clock in the named zone (now's zone when
// none) shows the matched time.
func clockTime(m []string, now time.Time) (time.Time, bool) {
	hour, _ := strconv.Atoi(m[1])
	minute := 0
	if m[2] != "" {
		minute, _ = strconv.Atoi(m[2])
	}
	ampm := strings.ToLower(strings.ReplaceAll(m[3], ".", ""))
	if m[2] == "" && ampm == "" {
		return time.Time{}, false // a bare number ("again 3") is not a clock time
	}
	switch ampm {
	case "am":
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		if hour == 12 {
			hour = 0
		}
	case "pm":
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		if hour != 12 {
			hour += 12
		}
	}
	if hour > 23 || minute > 59 {
		return time.Time{}, false
	}
	loc := now.Location()
	if z := m[4]; z != "" {
		switch strings.ToUpper(z) {
		case "UTC", "GMT", "Z":
			loc = time.UTC
		default:
			if l, err := time.LoadLocation(z); err == nil && strings.Contains(z, "/") {
				loc = l
			}
		}
	}
	local := now.In(loc)
	t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
	if t.Before(local) {
		t = t.AddDate(0, 0, 1)
	}
	return t, true
}

// dateTime is the moment a "Mon D[, YYYY] H[:MM] [AP]M" names in now's zone (the machine's local
// time: codex prints no zone); without a year, the next such date.
func dateTime(m []string, now time.Time) (time.Time, bool) {
	month := time.Month(strings.Index("janfebmaraprmayjunjulaugsepoctnovdec", strings.ToLower(m[1][:3]))/3 + 1)
	day, _ := strconv.Atoi(m[2])
	hour, _ := strconv.Atoi(m[4])
	minute := 0
	if m[5] != "" {
		minute, _ = strconv.Atoi(m[5])
	}
	switch strings.ToLower(strings.ReplaceAll(m[6], ".", "")) {
	case "am":
		if hour == 12 {
			hour = 0
		}
	case "pm":
		if hour < 12 {
			hour += 12
		}
	}
	if day < 1 || day > 31 || hour > 23 || minute > 59 {
		return time.Time{}, false
	}
	year := now.Year()
	if m[3] != "" {
		year, _ = strconv.Atoi(m[3])
	}
	t := time.Date(year, month, day, hour, minute, 0, 0, now.Location())
	if m[3] == "" && t.Before(now) {
		t = t.AddDate(1, 0, 0)
	}
	return t, true
}
