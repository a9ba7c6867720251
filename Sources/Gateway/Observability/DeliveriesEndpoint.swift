import DeliveryRecord
import Foundation
import HeraldCore
import HeraldHTTPServer
import NIOHTTP1
import Pushkins

/// `GET /_herald/v1/deliveries?event_id=…[&pushkey=…|&app_id=…]` or `?pushkey=…` on the metrics
/// listener (docs/operations.md, "Why didn't my phone ring?"): what became of one event's
/// deliveries, or of one device's, from the delivery record (the fleet's, with
/// `notify.repeat_store` on PostgreSQL). The event is named in its front end's words (a Matrix
/// event id, a Status message id, a gorush `notif_id`, a relayed request's id, an ADAMANT
/// transaction id; `front_end` says which). With `admin.token_file`, a bearer token is required.
/// Pushkeys are shown shortened, as in the logs.
///
///     {"event_id": "$ev", "deliveries": [{"event_id": "$ev", "front_end": "matrix", "app_id": …,
///       "pushkey": "abcdef…", "outcome": "delivered", "started_at": …, "finished_at": …,
///       "attempts": 1, "instance": "host:pid", "provider_id": …}]}
struct DeliveriesEndpoint: Sendable {
    static let path = "/_herald/v1/deliveries"

    let once: Once
    /// The bearer token required, when `admin.token_file` is set.
    let token: [UInt8]?

    init(once: Once, token: String?) {
        self.once = once
        self.token = token.map { Array($0.utf8) }
    }

    func handle(_ request: ServerRequest) async -> ServerResponse {
        guard request.method == .GET else {
            return Self.error(.methodNotAllowed, "M_UNRECOGNIZED", "only GET is served here")
        }
        if let token {
            guard let header = request.headers.first(name: "authorization"), header.lowercased().hasPrefix("bearer ") else {
                return Self.error(.unauthorized, "M_MISSING_TOKEN", "a bearer token is required (admin.token_file)")
            }
            guard ConstantTime.equals(Array(header.utf8.dropFirst(7)), token) else {
                return Self.error(.unauthorized, "M_UNKNOWN_TOKEN", "the bearer token is not admin.token_file's")
            }
        }
        let query = Self.parameters(request.uri)
        let event = query["event_id"].flatMap { $0.isEmpty ? nil : $0 }
        guard event != nil || query["pushkey"]?.isEmpty == false else {
            return Self.error(.badRequest, "M_MISSING_PARAM", "event_id or pushkey is required")
        }
        guard query["pushkey"] == nil || query["app_id"] == nil else {
            return Self.error(.badRequest, "M_INVALID_PARAM", "name a pushkey or an app_id, not both")
        }
        guard let guardian = once.guardian else {
            return Self.error(.notFound, "M_NOT_FOUND", "no delivery is recorded here (notify.repeat_window is 0)")
        }
        let found = await guardian.deliveries(DeliveryQuery(eventId: event, pushkey: query["pushkey"], appId: query["app_id"]))
        let asked: (String, JSONValue) =
            event.map { ("event_id", .string($0)) } ?? ("pushkey", .string(Redaction.pushkey(query["pushkey"] ?? "")))
        return .json(.ok, .object([asked.0: asked.1, "deliveries": .array(found.map(Self.json))]))
    }

    /// One delivery's object.
    static func json(_ delivery: TracedDelivery) -> JSONValue {
        var object: JSONObject = [
            "event_id": .string(delivery.eventId), "front_end": .string(delivery.frontEnd), "app_id": .string(delivery.appId),
            "pushkey": .string(delivery.pushkey), "outcome": .string(delivery.state.rawValue),
            "started_at": .string(UTCTimestamp.string(for: delivery.startedAt) + "Z"), "attempts": .int(Int64(delivery.attempts)),
            "instance": .string(delivery.instance),
        ]
        if let reason = delivery.reason { object["reason"] = .string(reason) }
        if let detail = delivery.detail { object["detail"] = .string(detail) }
        if let finished = delivery.finishedAt { object["finished_at"] = .string(UTCTimestamp.string(for: finished) + "Z") }
        if let id = delivery.providerId { object["provider_id"] = .string(id) }
        if let target = delivery.target { object["target"] = .string(target) }
        return .object(object)
    }

    /// The query string's parameters, percent-decoded (`+` is a space, as forms write it).
    static func parameters(_ uri: String) -> [String: String] {
        guard let mark = uri.firstIndex(of: "?") else { return [:] }
        var found: [String: String] = [:]
        for pair in uri[uri.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in
                text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
            }
            guard let name = parts.first.map(decode) else { continue }
            found[name] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return found
    }

    static func error(_ status: HTTPResponseStatus, _ code: String, _ message: String) -> ServerResponse {
        .json(status, ["errcode": .string(code), "error": .string(message)])
    }
}
