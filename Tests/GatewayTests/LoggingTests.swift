import HeraldCore
import HeraldHTTPServer
import HeraldUpstream
import Logging
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

@Suite struct LoggingTests {
    @Test func jsonLinesParseAndCarryMetadata() throws {
        var handler = HeraldLogHandler(label: "herald", format: .json, level: .info, clock: SystemClock())
        handler[metadataKey: "request_id"] = "r-1"
        let line = handler.format(
            level: .warning, message: "Device \"dispatch\" failed\n", metadata: ["pushkey": "\(Redaction.pushkey("abcdefghijkl"))"],
            timestamp: "2026-11-21T16:00:00.000Z")
        #expect(line.hasSuffix("\n"))
        let json = try JSONParser.parse(String(line.dropLast()))
        #expect(json["level"] == "warning")
        #expect(json["msg"] == "Device \"dispatch\" failed\n")
        #expect(json["request_id"] == "r-1")
        #expect(json["pushkey"] == "abcdef…")
        #expect(json["logger"] == "herald")
    }

    @Test func plainLinesPutTheRequestIdFirst() {
        var handler = HeraldLogHandler(label: "herald", format: .plain, level: .info, clock: SystemClock())
        handler[metadataKey: "request_id"] = "r-2"
        let line = handler.format(level: .info, message: "hello", metadata: ["b": "2", "a": "1"], timestamp: "T")
        #expect(line == "T INFO herald [r-2] hello a=1 b=2\n")
    }

    @Test func aNewlineInARequestValueCannotForgeALogLine() throws {
        let handler = HeraldLogHandler(label: "herald", format: .plain, level: .info, clock: SystemClock())
        let line = handler.format(
            level: .info, message: "Unknown app ID", metadata: ["app_id": "x\n2026-01-01 ERROR herald forged"], timestamp: "T")
        #expect(line.filter { $0 == "\n" }.count == 1)  // only the line's own end
        #expect(line == "T INFO herald Unknown app ID app_id=\"x\\n2026-01-01 ERROR herald forged\"\n")
        let json = HeraldLogHandler(label: "herald", format: .json, level: .info, clock: SystemClock())
            .format(level: .info, message: "m\r\n", metadata: ["v": "\u{1B}[31m"], timestamp: "T")
        #expect(json.filter { $0 == "\n" }.count == 1)
        #expect(try JSONParser.parse(String(json.dropLast()))["v"] == "\u{1B}[31m")
    }
}
