import Foundation
import HeraldCore
import HeraldHTTPServer
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

@Suite struct UTCTimestampTests {
    /// The format log lines had when Foundation wrote them.
    private static func foundation(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon))
    }

    @Test func knownInstants() {
        #expect(UTCTimestamp.string(for: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000")
        #expect(UTCTimestamp.string(for: Date(timeIntervalSince1970: 951_782_400.25)) == "2000-02-29T00:00:00.250")
        #expect(UTCTimestamp.string(for: Date(timeIntervalSince1970: 4_107_542_399.999)) == "2100-02-28T23:59:59.999")
        #expect(UTCTimestamp.string(for: Date(timeIntervalSince1970: 4_107_542_400)) == "2100-03-01T00:00:00.000")
        #expect(UTCTimestamp.string(for: Date(timeIntervalSince1970: -0.0005)) == "1969-12-31T23:59:59.999")
        #expect(UTCTimestamp.string(for: Date(timeIntervalSince1970: 1_795_276_800)) == "2026-11-21T16:00:00.000")
    }

    @Test func agreesWithFoundationsFormatter() {
        var generator = SystemRandomNumberGenerator()
        var disagreements: [String] = []
        for _ in 0..<5000 {
            // Whole milliseconds (plus a quarter), 1970 to 2200: how the two round a fraction
            // between milliseconds is not the point.
            let milliseconds = Double(Int64.random(in: 0..<7_258_118_400_000, using: &generator))
            let date = Date(timeIntervalSince1970: (milliseconds + 0.25) / 1000)
            if UTCTimestamp.string(for: date) != Self.foundation(date) {
                disagreements.append("\(UTCTimestamp.string(for: date)) != \(Self.foundation(date))")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    }
}
