package import HeraldCore
package import HeraldUpstream
package import Metrics
import NIOCore
import NIOHTTP1
import Pushkins
import Synchronization

/// Asks ADAMANT nodes. A node that answers an HTTP error, something that is not JSON, or
/// `success: false` (nodes report handler errors with HTTP 200) fails the request, and the next
/// request goes to the next node in the list; the caller backs off.
package final class AdamantNodeClient: Sendable {
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package var node: String
        package var reason: String
        package var description: String { "\(node): \(reason)" }
    }

    package let nodes: [String]
    private let client: UpstreamHTTPClient
    private let current = Atomic<Int>(0)
    private let failures: Metrics.Counter

    /// The newest-first page size of the node's list endpoints (their maximum for chats).
    package static let pageSize = 100

    package init(nodes: [String], settings: UpstreamSettings, metrics: any MetricsFactory) throws {
        self.nodes = nodes.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.client = try UpstreamHTTPClient(settings: settings)
        self.failures = Metrics.Counter(label: MetricName.adamantNodeFailures, dimensions: [], factory: metrics)
    }

    package func shutdown() async { await client.shutdown() }

    /// `GET path?query` on the current node: the answer when it is a JSON object with `success: true`.
    package func get(_ path: String, query: [(String, String)]) async throws(Failure) -> JSONValue {
        try await answer(path, query: query).json
    }

    /// The index of the node requests go to now.
    package var currentNode: Int { current.load(ordering: .relaxed) % max(nodes.count, 1) }

    /// The chain's height as the current node reports it, and which node (`currentNode`) said so.
    package func height() async throws(Failure) -> (height: Int64, node: Int) {
        let (json, node) = try await answer("/api/blocks/getHeight", query: [])
        guard let height = json["height"]?.pythonInt else { throw Failure(node: nodes[node], reason: "no height in the answer") }
        return (height, node)
    }

    private func answer(_ path: String, query: [(String, String)]) async throws(Failure) -> (json: JSONValue, node: Int) {
        let index = current.load(ordering: .relaxed) % max(nodes.count, 1)
        let node = nodes[index]
        let url = node + path + (query.isEmpty ? "" : "?" + query.map { "\($0.0)=\($0.1)" }.joined(separator: "&"))
        do {
            let response = try await client.send(method: .GET, url: url, headers: HTTPHeaders(), body: nil)
            guard response.status == 200 else { throw Failure(node: node, reason: "HTTP \(response.status)") }
            guard let json = try? JSONParser.parse(response.body.readableBytesView), json.objectValue != nil else {
                throw Failure(node: node, reason: "the answer is not a JSON object")
            }
            guard json["success"] == .bool(true) else {
                throw Failure(node: node, reason: "success is not true: \(json["error"]?.stringValue ?? "no error given")")
            }
            return (json, index)
        } catch let failure as Failure {
            rotate(from: index)
            throw failure
        } catch {
            rotate(from: index)
            throw Failure(node: node, reason: "\(error)")
        }
    }

    private func rotate(from index: Int) {
        failures.increment()
        _ = current.compareExchange(expected: index, desired: (index + 1) % max(nodes.count, 1), ordering: .relaxed)
    }

    /// Every page of a newest-first list (`transactions`), following `offset` until a page is short.
    package func transactions(_ path: String, query: [(String, String)], maxPages: Int = 1000) async throws(Failure) -> [AdamantTransaction]
    {
        var all: [AdamantTransaction] = []
        var offset = 0
        for _ in 0..<maxPages {
            let page = try await get(path, query: query + (offset > 0 ? [("offset", String(offset))] : []))
            let rows = page["transactions"]?.arrayValue ?? []
            all.append(contentsOf: rows.compactMap(AdamantTransaction.init))
            if rows.count < Self.pageSize { break }
            offset += Self.pageSize
        }
        return all
    }
}
