import HeraldCore
import HeraldHTTPServer
import HeraldUpstream
import Pushkins
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// Every validation error of docs/compatibility/matrix.md, "Validation" (and the shapes of §13 that crash Sygnal): the status,
/// the Matrix errcode and Sygnal's message, as JSON.
@Suite struct NotifyValidationTests {
    static let device = #"{"app_id": "com.example.probe", "pushkey": "accept"}"#

    static let cases: [(String, String, String)] = [
        ("not json", "M_NOT_JSON", "Expected JSON request body"),
        (#"{"notification": NaN}"#, "M_NOT_JSON", "Expected JSON request body"),
        (#"{"notification": {"devices": [], "x": Infinity}}"#, "M_NOT_JSON", "Expected JSON request body"),
        ("{}", "M_BAD_JSON", "Invalid notification: expecting object in 'notification' key"),
        ("[]", "M_BAD_JSON", "Invalid notification: expecting object in 'notification' key"),
        ("null", "M_BAD_JSON", "Invalid notification: expecting object in 'notification' key"),
        ("42", "M_BAD_JSON", "Invalid notification: expecting object in 'notification' key"),
        (#""text""#, "M_BAD_JSON", "Invalid notification: expecting object in 'notification' key"),
        (#"{"notification": []}"#, "M_BAD_JSON", "Invalid notification: expecting object in 'notification' key"),
        (#"{"notification": {}}"#, "M_BAD_JSON", "Expected list in 'devices' key"),
        (#"{"notification": {"devices": {}}}"#, "M_BAD_JSON", "Expected list in 'devices' key"),
        (#"{"notification": {"devices": []}}"#, "M_BAD_JSON", "No devices in notification"),
        (#"{"notification": {"devices": [{"pushkey": "a"}]}}"#, "M_BAD_JSON", "Device with missing or non-string app_id"),
        (#"{"notification": {"devices": [{"app_id": 1, "pushkey": "a"}]}}"#, "M_BAD_JSON", "Device with missing or non-string app_id"),
        (#"{"notification": {"devices": ["x"]}}"#, "M_BAD_JSON", "Device with missing or non-string app_id"),
        (#"{"notification": {"devices": [7]}}"#, "M_BAD_JSON", "Device with missing or non-string app_id"),
        (#"{"notification": {"devices": [{"app_id": "a"}]}}"#, "M_BAD_JSON", "Device with missing or non-string pushkey"),
        (#"{"notification": {"devices": [{"app_id": "a", "pushkey": null}]}}"#, "M_BAD_JSON", "Device with missing or non-string pushkey"),
        (
            #"{"notification": {"devices": [{"app_id": "a", "pushkey": "k", "pushkey_ts": "1"}]}}"#, "M_BAD_JSON",
            "pushkey_ts is of invalid type"
        ),
        (
            #"{"notification": {"devices": [{"app_id": "a", "pushkey": "k", "pushkey_ts": null}]}}"#, "M_BAD_JSON",
            "pushkey_ts is of invalid type"
        ),
        (#"{"notification": {"devices": [{"app_id": "a", "pushkey": "k", "data": []}]}}"#, "M_BAD_JSON", "data is of invalid type"),
        (#"{"notification": {"devices": [{"app_id": "a", "pushkey": "k", "data": null}]}}"#, "M_BAD_JSON", "data is of invalid type"),
        (#"{"notification": {"devices": [{"app_id": "a", "pushkey": "k", "tweaks": "x"}]}}"#, "M_BAD_JSON", "tweaks is of invalid type"),
        (
            #"{"notification": {"devices": [{"app_id": "a", "pushkey": "k", "tweaks": {"sound": 1}}]}}"#, "M_BAD_JSON",
            "sound is of invalid type"
        ),
        (#"{"notification": {"counts": {"unread": "1"}, "devices": [\#(device)]}}"#, "M_BAD_JSON", "unread is of invalid type"),
        (#"{"notification": {"counts": {"unread": null}, "devices": [\#(device)]}}"#, "M_BAD_JSON", "unread is of invalid type"),
        (#"{"notification": {"counts": {"missed_calls": 1.5}, "devices": [\#(device)]}}"#, "M_BAD_JSON", "missed_calls is of invalid type"),
        (#"{"notification": {"counts": null, "devices": [\#(device)]}}"#, "M_BAD_JSON", "counts is of invalid type"),
        (#"{"notification": {"counts": 3, "devices": [\#(device)]}}"#, "M_BAD_JSON", "counts is of invalid type"),
        // Sygnal checks counts before the devices.
        (#"{"notification": {"counts": {"unread": "x"}, "devices": [{"pushkey": "a"}]}}"#, "M_BAD_JSON", "unread is of invalid type"),
    ]

    @Test(arguments: cases)
    func invalidBodiesGet400WithSygnalsMessage(_ body: String, _ errcode: String, _ message: String) async throws {
        let probe = Probe()
        let herald = try await InMemoryGateway.start(
            gatewayYAML(apps: "  com.example.probe:\n    type: probe\n"), registry: .withProbe(probe))
        let response = try await herald.notify(body)
        await herald.stop()
        #expect(response.status == 400)
        #expect(response.headers.first(name: "Content-Type") == "application/json")
        #expect(response.json == ["errcode": .string(errcode), "error": .string(message)])
        #expect(probe.seen.isEmpty)
    }

    @Test func deeplyNestedBodyIsRefusedNotACrash() async throws {
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: "  a:\n    type: probe\n"), registry: .withProbe(Probe()))
        let body =
            #"{"notification": {"devices": [], "content": "# + String(repeating: "[", count: 50_000) + String(repeating: "]", count: 50_000)
            + "}}"
        let response = try await herald.notify(body)
        #expect(response.status == 400)
        #expect(response.json?["errcode"] == "M_NOT_JSON")
        #expect(await herald.request(.GET, "/health").status == 200)
        await herald.stop()
    }

    @Test func invalidUTF8IsNotJSON() async throws {
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: "  a:\n    type: probe\n"), registry: .withProbe(Probe()))
        let response = await herald.request(
            .POST, "/_matrix/push/v1/notify", body: Array(#"{"notification": ""#.utf8) + [0xFF] + Array(#""}"#.utf8))
        await herald.stop()
        #expect(response.status == 400)
        #expect(response.json?["errcode"] == "M_NOT_JSON")
    }

    @Test func trueCountsAsAnIntAndAListOfCountsAsNoCountsLikeSygnal() async throws {
        let herald = try await InMemoryGateway.start(gatewayYAML(apps: "  a:\n    type: probe\n"), registry: .withProbe(Probe()))
        let dev = #"{"app_id": "a", "pushkey": "accept", "pushkey_ts": true}"#
        let first = try await herald.notify(#"{"notification": {"counts": {"unread": true}, "devices": [\#(dev)]}}"#)
        let second = try await herald.notify(#"{"notification": {"counts": [1], "devices": [\#(dev)]}}"#)
        await herald.stop()
        #expect(first.status == 200)
        #expect(second.status == 200)
    }
}
