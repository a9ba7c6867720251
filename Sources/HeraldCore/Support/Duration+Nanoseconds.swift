extension Duration {
    /// Whole nanoseconds (a metric's record); a duration past what 64 bits of nanoseconds hold
    /// (292 years) is that much. SwiftNIO's timers take a `Duration` as it is (`TimeAmount(_:)`).
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds < Int64.max / 1_000_000_000 else { return Int64.max }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
