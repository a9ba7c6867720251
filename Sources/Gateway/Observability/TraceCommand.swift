import DeliveryRecord
import Foundation
import HeraldCore
import HeraldUpstream
import NIOHTTP1
import Pushkins

/// `herald trace`: asks a running instance, on its metrics listener, what became of an event's
/// deliveries (`GET /_herald/v1/deliveries`, docs/operations.md "Why didn't my phone ring?") and
/// prints them one line each. With the record in PostgreSQL the answer covers the fleet.
package enum TraceCommand {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// The trace's lines, or why there is none.
    package static func run(config: GatewayConfig, eventId: String?, pushkey: String?, appId: String?) async throws(Failure) -> String {
        guard config.prometheus.enabled else {
            throw Failure(description: "metrics.prometheus is not enabled: the trace is served on the metrics listener")
        }
        let host = ["0.0.0.0", "::", ""].contains(config.prometheus.address) ? "127.0.0.1" : config.prometheus.address
        let query = [("event_id", eventId), ("pushkey", pushkey), ("app_id", appId)].compactMap { name, value in
            value.map { "\(name)=" + escaped($0) }
        }.joined(separator: "&")
        let url = "http://\(host.contains(":") ? "[\(host)]" : host):\(config.prometheus.port)\(DeliveriesEndpoint.path)?\(query)"
        var headers = HTTPHeaders()
        if let token = config.admin.token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        let client: UpstreamHTTPClient
        do {
            client = try UpstreamHTTPClient(settings: UpstreamSettings(maxResponseBytes: 16 << 20))
        } catch {
            throw Failure(description: "\(error)")
        }
        let answer: Result<UpstreamResponse, any Error>
        do {
            answer = .success(try await client.send(method: .GET, url: url, headers: headers, body: nil))
        } catch {
            answer = .failure(error)
        }
        await client.shutdown()
        guard case .success(let response) = answer else {
            throw Failure(description: "no answer from the metrics listener at \(host):\(config.prometheus.port)")
        }
        guard let body = try? JSONParser.parse(response.body.readableBytesView), response.status == 200 else {
            let message = (try? JSONParser.parse(response.body.readableBytesView))?["error"]?.stringValue ?? response.bodyText
            throw Failure(description: "the metrics listener answered \(response.status): \(message)")
        }
        return render(body)
    }

    /// What each front end calls the id its deliveries are traced under.
    static func word(_ frontEnd: String) -> String {
        switch frontEnd {
        case "status": return "Status message"
        case "gorush": return "gorush notification"
        case "relay": return "relayed request"
        case "adamant": return "ADAMANT transaction"
        default: return "event"
        }
    }

    /// One line for the event (or the device), then one per delivery; asked by device, each line
    /// names its event in its front end's words.
    static func render(_ answer: JSONValue) -> String {
        let deliveries = answer["deliveries"]?.arrayValue ?? []
        let event = answer["event_id"]?.stringValue
        let asked =
            event.map { id in
                "\(word(deliveries.first?["front_end"]?.stringValue ?? TraceStart.matrix)) \(id)"
            } ?? "device \(answer["pushkey"]?.stringValue ?? "?")"
        guard !deliveries.isEmpty else {
            return "\(asked): no delivery recorded (unknown here, older than notify.repeat_window, or pushed out of the record)"
        }
        var lines = ["\(asked): \(deliveries.count) deliver\(deliveries.count == 1 ? "y" : "ies")"]
        for delivery in deliveries {
            let text = { (key: String) in delivery[key]?.stringValue }
            var line = "  "
            if event == nil { line += "\(word(text("front_end") ?? TraceStart.matrix)) \(text("event_id") ?? "?")  " }
            line += "\(text("app_id") ?? "?")  \(text("pushkey") ?? "?")  \(text("outcome") ?? "?")"
            if let reason = text("reason") { line += " (\(reason): \(text("detail") ?? ""))" }
            line += "  started \(text("started_at") ?? "?")"
            if let finished = text("finished_at") { line += ", finished \(finished)" }
            line += "  attempts \(delivery["attempts"]?.pythonInt ?? 0)  on \(text("instance") ?? "?")"
            if let id = text("provider_id") { line += "  provider id \(id)" }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    private static func escaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }
}
