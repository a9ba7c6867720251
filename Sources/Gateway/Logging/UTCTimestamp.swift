import Foundation

/// The time of a log line, `2026-11-21T16:00:00.000` in UTC (ISO 8601 to the millisecond).
///
/// Computed from the date's seconds rather than with `Date.formatted(.iso8601…)`: that builds a
/// Gregorian calendar whose time-zone lookup loads ICU's time-zone data, about 3 MiB that then stay
/// resident for the life of the process, for a format that needs no calendar at all.
enum UTCTimestamp {
    static func string(for date: Date) -> String {
        let millisecondsSinceEpoch = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (days, millisecondOfDay) = millisecondsSinceEpoch.quotientAndRemainderFlooring(dividingBy: 86_400_000)
        let (year, month, day) = civil(daysSinceEpoch: days)
        let seconds = millisecondOfDay / 1000
        var out: [UInt8] = []
        out.reserveCapacity(23)
        append(year, digits: 4, to: &out)
        out.append(UInt8(ascii: "-"))
        append(month, digits: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        append(day, digits: 2, to: &out)
        out.append(UInt8(ascii: "T"))
        append(seconds / 3600, digits: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        append(seconds / 60 % 60, digits: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        append(seconds % 60, digits: 2, to: &out)
        out.append(UInt8(ascii: "."))
        append(millisecondOfDay % 1000, digits: 3, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (the "days from civil"
    /// algorithm run backwards, over 400-year eras of 146 097 days).
    static func civil(daysSinceEpoch: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = daysSinceEpoch + 719_468  // days from 0000-03-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // from March 1st
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func append(_ value: Int64, digits: Int, to out: inout [UInt8]) {
        var divisor: Int64 = 1
        for _ in 1..<digits { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor % 10))
            rest %= divisor
            divisor /= 10
        }
    }
}

extension Int64 {
    /// Quotient rounded toward negative infinity, and a remainder in `0..<divisor`.
    fileprivate func quotientAndRemainderFlooring(dividingBy divisor: Int64) -> (Int64, Int64) {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}
