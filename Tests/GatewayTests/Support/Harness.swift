import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldTestSupport
import HeraldUpstream
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Pushkins
import Synchronization
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// A gateway started in-process on a free loopback port, driven over real sockets.
final class RunningGateway: Sendable {
    let gateway: Gateway
    let task: Task<Void, Never>
    let base: String

    init(gateway: Gateway, task: Task<Void, Never>) {
        self.gateway = gateway
        self.task = task
        self.base = "http://127.0.0.1:\(gateway.ports[0])"
    }

    static func start(_ yaml: String, registry: PushkinRegistry = .standard, clock: any HeraldClock = SystemClock()) async throws
        -> RunningGateway
    {
        let gateway = try await built(yaml, registry: registry, clock: clock)
        try await gateway.start()
        let task = Task { _ = try? await gateway.run() }
        return RunningGateway(gateway: gateway, task: task)
    }

    /// The gateway of `yaml`, built and not started (its log quiet); a config with errors is refused.
    static func built(_ yaml: String, registry: PushkinRegistry, clock: any HeraldClock) async throws -> Gateway {
        let (config, diagnostics) = try ConfigLoading.parse(yaml)
        var logger = Logger(label: "herald-test")
        logger.logLevel = .critical
        let gateway = Gateway(config: config, diagnostics: diagnostics, registry: registry, logger: logger, clock: clock)
        guard diagnostics.errors.isEmpty else {
            await gateway.close()
            throw ConfigLoading.Failure(errors: diagnostics.errors)
        }
        return gateway
    }

    func stop() async {
        await gateway.shutdown()
        await task.value
    }

    func notify(_ body: String) async throws -> TestResponse {
        try await request(.POST, "/_matrix/push/v1/notify", body: Array(body.utf8))
    }

    func notify(_ body: JSONValue) async throws -> TestResponse {
        try await request(.POST, "/_matrix/push/v1/notify", body: JSONWriter.serialize(body))
    }

    func request(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, port: Int? = nil, timeout: TimeAmount = .seconds(60),
        headers: [(String, String)] = []
    ) async throws -> TestResponse {
        let url = port.map { "http://127.0.0.1:\($0)\(path)" } ?? base + path
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.body = .bytes(ByteBuffer(bytes: body))
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let collected = try await response.body.collect(upTo: 1 << 24)
        return TestResponse(status: Int(response.status.code), headers: response.headers, body: Array(collected.readableBytesView))
    }

    func metricsText() async throws -> String {
        let port = try #require(gateway.metricsPort)
        return String(decoding: try await request(.GET, "/metrics", port: port).body, as: UTF8.self)
    }

    /// The delivery trace of `event` (docs/operations.md, "Why didn't my phone ring?"), from the
    /// metrics listener; `query` adds `&pushkey=…` or `&app_id=…`.
    func deliveries(event: String, query: String = "") async throws -> [JSONValue] {
        let response = try await trace(event: event, query: query)
        return response.json?["deliveries"]?.arrayValue ?? []
    }

    /// A device's delivery trace across its events (`?pushkey=…`).
    func deliveries(pushkey: String) async throws -> [JSONValue] {
        let port = try #require(gateway.metricsPort)
        let escaped = pushkey.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? pushkey
        return try await request(.GET, "/_herald/v1/deliveries?pushkey=\(escaped)", port: port).json?["deliveries"]?.arrayValue ?? []
    }

    func trace(event: String, query: String = "") async throws -> TestResponse {
        let port = try #require(gateway.metricsPort)
        let escaped = event.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? event
        return try await request(.GET, "/_herald/v1/deliveries?event_id=\(escaped)\(query)", port: port)
    }
}

struct TestResponse {
    let status: Int
    let headers: HTTPHeaders
    let body: [UInt8]

    var json: JSONValue? { try? JSONParser.parse(body) }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Moves `clock` on by `step` until `condition` holds: what lets a retry's backoff, which sleeps on
/// the clock, pass while the test waits for the retry (a fake's record). False after 60 s.
func advancing(_ clock: ManualClock, by step: Duration = .milliseconds(10), until condition: () async -> Bool) async -> Bool {
    await eventually {
        if await condition() { return true }
        clock.advance(by: step)
        return false
    }
}

/// Each attempt of an upstream call that never answers, timed out on `clock`: `arrived` counts the
/// fake's requests; for each of `attempts`, once it arrived (after the retry's backoff) and its
/// deadline is armed, the clock moves `requestTimeout` on. False if an attempt never came.
func timingOut(
    _ clock: ManualClock, attempts: Int, requestTimeout: Duration = .seconds(10), arrived: @Sendable () -> Int
) async -> Bool {
    for attempt in 1...attempts {
        let came = attempt == 1 ? await eventually { arrived() >= 1 } : await advancing(clock) { arrived() >= attempt }
        let armed = await eventually { clock.loopTimers(dueWithin: requestTimeout) >= 1 }
        guard came && armed else { return false }
        clock.advance(by: requestTimeout)
    }
    return true
}

/// A scratch directory for key files.
func temporaryDirectory() -> String { ScratchDirectory.make("herald-test") }

/// The `apps:` entry of a Web Push app that may reach the fake service on loopback, with quick retries.
/// An APNs app with a provider token (the key `APNsTestKey` wrote in `directory`) for the fake APNs
/// at `baseURL`, and timeouts no loaded machine reaches.
func apnsApp(_ key: String, directory: String, baseURL: String, caFile: String, topic: String, extra: String = "") -> String {
    """
      \(key):
        type: apns
        keyfile: \(directory)/AuthKey.p8
        key_id: ABC123DEFG
        team_id: TEAM123456
        topic: \(topic)
        base_url: \(baseURL)
        tls_ca_file: \(caFile)
    \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

    """
}

func webpushApp(_ key: String, directory: String, extra: String = "") -> String {
    """
      \(key):
        type: webpush
        vapid_private_key: \(directory)/vapid-\(abs(key.hashValue)).pem
        create_vapid_key_if_missing: true
        vapid_contact_email: ops@example.org
        allow_insecure_endpoints: true
        allow_private_endpoints: true
        retry_initial_backoff: 0.01
        retry_max_backoff: 0.05
    \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

    """
}

/// A gateway's YAML with `apps` and the product's defaults: no deadline or timeout of the
/// harness's own (a test of one sets it). The suite runs at most eight tests at once
/// (scripts/test.sh), so that a connection's set-up, a notify's answer and a record's statement
/// get a core within the defaults on a busy two-core machine.
func gatewayYAML(apps: String, extra: String = "", http: String = "") -> String {
    """
    http:
      bind_addresses: ['127.0.0.1']
      port: 0
      shutdown_grace_period: 10
    \(http.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
    metrics:
      prometheus:
        enabled: true
        address: 127.0.0.1
        port: 0
    \(extra)
    apps:
    \(apps)
    """
}

/// A notify body with the given devices, optionally around a notification.
func notifyBody(_ notification: JSONObject = [:], devices: [JSONValue]) -> JSONValue {
    var n = notification
    n["devices"] = .array(devices)
    return ["notification": .object(n)]
}

/// A pushkin for tests of the gateway itself: what it does depends on the pushkey
/// (`accept`, `reject`, `fail`, `drop`, `skip`; `hold…` waits until the test calls `release()`,
/// then accepts).
final class ProbePushkin: Pushkin {
    let name: String
    let type = PushkinType("probe")
    let probe: Probe

    init(name: String, probe: Probe) {
        self.name = name
        self.probe = probe
    }

    func dispatch(_ notification: PushNotification, device: Device, context: DispatchContext) async -> DeviceResult {
        DeviceResult(await outcome(notification, device: device))
    }

    private func outcome(_ notification: PushNotification, device: Device) async -> DeviceOutcome {
        probe.begin(device.pushkey, unread: notification.counts.unread.map { Int($0) })
        defer { probe.end() }
        switch device.pushkey {
        case let k where k.hasPrefix("reject"): return .rejected(reason: .invalidPushkey("probe"))
        case let k where k.hasPrefix("fail"): return .failed(reason: .network("probe failure"))
        case let k where k.hasPrefix("drop"): return .dropped(reason: .payloadTooLarge)
        case let k where k.hasPrefix("skip"): return .skipped(reason: .nothingToSend)
        case let k where k.hasPrefix("hold"):
            await probe.waitForRelease()
            return .delivered
        default: return .delivered
        }
    }
}

final class Probe: Sendable {
    private struct State {
        var seen: [String] = []
        /// Each dispatch's `counts.unread`.
        var unread: [Int?] = []
        /// For each dispatch, the event loop whose thread ran it (nil: a thread of Swift's pool).
        var loops: [ObjectIdentifier?] = []
        var active = 0
        var maxActive = 0
        var released = false
    }
    private let state = Mutex(State())

    func begin(_ key: String, unread: Int? = nil) {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop.map { ObjectIdentifier($0 as AnyObject) }
        state.withLock {
            $0.seen.append(key)
            $0.unread.append(unread)
            $0.loops.append(loop)
            $0.active += 1
            $0.maxActive = max($0.maxActive, $0.active)
        }
    }
    func end() { state.withLock { $0.active -= 1 } }
    func release() { state.withLock { $0.released = true } }

    /// Waits (at most 60 s) for `release()`.
    func waitForRelease() async {
        await eventually { state.withLock { $0.released } }
    }

    /// Waits (at most 60 s) until `count` dispatches are in progress.
    func waitForActive(_ count: Int) async {
        await eventually { active >= count }
    }
    var seen: [String] { state.withLock { $0.seen } }
    var unread: [Int?] { state.withLock { $0.unread } }
    var loops: [ObjectIdentifier?] { state.withLock { $0.loops } }
    var maxActive: Int { state.withLock { $0.maxActive } }
    var active: Int { state.withLock { $0.active } }
}

extension PushkinRegistry {
    static func withProbe(_ probe: Probe) -> PushkinRegistry {
        var registry = PushkinRegistry.standard
        registry.register(PushkinType("probe")) { name, config, _ in
            ProbePushkin(name: name, probe: probe)
        }
        return registry
    }
}

/// Loads a sample from the fixtures: real Synapse requests and what Sygnal sent upstream.
func fixture(_ name: String) throws -> JSONValue {
    guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures") else {
        throw FixtureMissing(name: name)
    }
    return try JSONParser.parse(Array(try Data(contentsOf: url)))
}

struct FixtureMissing: Error { let name: String }

/// A recorded notify request with its first device's `app_id` replaced (samples name other apps).
func withAppId(_ request: JSONValue, _ appId: String) -> JSONValue {
    guard case .object(var root) = request, case .object(var n)? = root["notification"], case .array(var devices)? = n["devices"],
        case .object(var device)? = devices.first
    else { return request }
    device["app_id"] = .string(appId)
    devices[0] = .object(device)
    n["devices"] = .array(devices)
    root["notification"] = .object(n)
    return .object(root)
}
