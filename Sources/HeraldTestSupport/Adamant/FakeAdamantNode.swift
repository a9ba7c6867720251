package import AdamantAdapter
import Foundation
import Gateway
package import HeraldCore
package import HeraldHTTPServer
import Logging
import NIOCore
package import Synchronization

/// An ADAMANT node on loopback with the subset of its API the notification service uses
/// (docs/adamant.md, "Pushes"): `/api/chats/get` (chat type filter, signals hidden unless asked
/// for, strict `fromHeight`, at most 100 rows a page), `/api/transactions` (transaction type,
/// inclusive `fromHeight`), `/api/transactions/get`, `/api/blocks/getHeight`; errors as nodes
/// report them (`success: false` with HTTP 200). Tests add transactions made with real
/// encryption, each in a block of its own unless they say otherwise, and switch the node's health.
package final class FakeAdamantNode: HTTPHandler, Sendable {
    package enum Health: Sendable {
        case healthy
        /// `{"success": false, "error": …}` with HTTP 200, as a node's handler errors are.
        case successFalse
        case http500
        case garbage
        case slow(Duration)
    }

    package let server: HTTPServer
    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    private let serveTask: Mutex<Task<Void, Never>?> = Mutex(nil)
    private struct State {
        var transactions: [AdamantTransaction] = []
        var height: Int64 = 1000
        var nextId: UInt64 = 1_000_000_000_000_000_001
        var health = Health.healthy
        var requests: [String] = []
        var recordRequests = true
        /// Users whose signals were added, for the benchmark's load.
        var users: [AdamantKeys] = []
        var service: AdamantKeys?
        var lastSignalHeight: Int64 = 0
        var signalsReadUpTo: Int64 = 0
    }
    private let state = Mutex(State())
    /// The ADAMANT epoch is 2017-09-02T17:00:00Z; timestamps count seconds from it.
    package static let epoch: Double = 1_504_371_600

    package static func start() async throws -> FakeAdamantNode {
        let box = HandlerBox<FakeAdamantNode>()
        let server = try await HTTPServer.bind(
            host: "127.0.0.1", port: 0, handler: box, logger: Logger(label: "fake-adamant"), clock: SystemClock())
        let node = FakeAdamantNode(server: server)
        box.set(node)
        node.serveTask.withLock { $0 = Task { await server.serve() } }
        return node
    }

    private init(server: HTTPServer) { self.server = server }

    package func stop() async {
        await server.shutdown()
        await serveTask.withLock { $0 }?.value
    }

    package func setHealth(_ health: Health) { state.withLock { $0.health = health } }
    /// Off keeps memory flat under a benchmark's load.
    package func setRecordRequests(_ record: Bool) { state.withLock { $0.recordRequests = record } }
    /// Whether a poll for signals has asked for everything above the last signal added.
    package var signalsCaughtUp: Bool { state.withLock { $0.signalsReadUpTo >= $0.lastSignalHeight } }
    /// Extra fields of `GET /_fake/state` (the benchmark adds the fake APNs's count).
    package let extraState = Mutex<(@Sendable () -> JSONObject)?>(nil)
    package var requests: [String] { state.withLock { $0.requests } }
    package var height: Int64 { state.withLock { $0.height } }

    /// Adds a transaction in a new block (or the current one), with the next id.
    @discardableResult
    package func add(
        type: Int, from sender: AdamantKeys, to recipient: String, chat: AdamantTransaction.Chat?, newBlock: Bool = true
    ) -> AdamantTransaction {
        state.withLock { s in
            if newBlock { s.height += 1 }
            let transaction = AdamantTransaction(
                id: String(s.nextId), height: s.height, type: type,
                timestamp: Int64(Date().timeIntervalSince1970 - Self.epoch) * 10 + Int64(s.transactions.count),
                senderId: sender.address, senderPublicKey: Hex.encode(sender.publicKey), recipientId: recipient, chat: chat)
            s.nextId += 1
            s.transactions.append(transaction)
            return transaction
        }
    }

    /// A registration signal from `user` to the service, encrypted as the app does.
    @discardableResult
    package func addSignal(
        from user: AdamantKeys, to service: AdamantKeys, token: String, provider: String = "apns", action: String = "add",
        newBlock: Bool = true
    ) throws -> AdamantTransaction {
        let plaintext = JSONWriter.serialize(["token": .string(token), "provider": .string(provider), "action": .string(action)])
        let transaction = try addChat(from: user, to: service, bytes: plaintext, chatType: 3, newBlock: newBlock)
        state.withLock {
            $0.users.append(user)
            $0.service = service
            $0.lastSignalHeight = transaction.height
        }
        return transaction
    }

    /// A chat message (type 1 by default) from `sender` to `recipient`, really encrypted.
    @discardableResult
    package func addChat(
        from sender: AdamantKeys, to recipient: AdamantKeys, text: String = "hello", chatType: Int = 1, newBlock: Bool = true
    ) throws -> AdamantTransaction {
        try addChat(from: sender, to: recipient, bytes: Array(text.utf8), chatType: chatType, newBlock: newBlock)
    }

    private func addChat(from sender: AdamantKeys, to recipient: AdamantKeys, bytes: [UInt8], chatType: Int, newBlock: Bool) throws
        -> AdamantTransaction
    {
        let nonce = AdamantBox.randomNonce()
        let sealed = try AdamantBox.seal(bytes, nonce: nonce, senderPrivate: sender.privateKey, recipientPublic: recipient.publicKey)
        return add(
            type: 8, from: sender, to: recipient.address,
            chat: AdamantTransaction.Chat(type: chatType, message: Hex.encode(sealed), ownMessage: Hex.encode(nonce)), newBlock: newBlock)
    }

    /// A plain ADM transfer.
    @discardableResult
    package func addTransfer(from sender: AdamantKeys, to recipient: String, newBlock: Bool = true) -> AdamantTransaction {
        add(type: 0, from: sender, to: recipient, chat: nil, newBlock: newBlock)
    }

    package func handle(_ request: ServerRequest) async -> ServerResponse {
        let health = state.withLock { s -> Health in
            if s.recordRequests { s.requests.append(request.uri) }
            return s.health
        }
        if request.path.hasPrefix("/_fake/") { return control(request) }
        switch health {
        case .healthy: break
        case .successFalse: return reply(["success": false, "error": "Blockchain is loading"])
        case .http500: return ServerResponse.json(.internalServerError, ["success": false, "error": "API error: boom"])
        case .garbage: return ServerResponse(status: .ok, body: ByteBuffer(string: "<html>not json"))
        case .slow(let delay): try? await Task.sleep(for: delay)
        }
        let query = Self.query(request.uri)
        switch request.path {
        case "/api/blocks/getHeight":
            return reply(["success": true, "height": .int(height)])
        case "/api/chats/get":
            if query["type"] == "3" {
                state.withLock { $0.signalsReadUpTo = max($0.signalsReadUpTo, query["fromHeight"].flatMap(Int64.init) ?? 0) }
            }
            return list(query, chats: true)
        case "/api/transactions":
            return list(query, chats: false)
        case "/api/transactions/get":
            guard let id = query["id"], let found = state.withLock({ $0.transactions.first { $0.id == id } }) else {
                return reply(["success": false, "error": "Transaction not found"])
            }
            return reply(["success": true, "transaction": found.json])
        default:
            return ServerResponse.json(.internalServerError, ["success": false, "error": "API endpoint not found"])
        }
    }

    /// The benchmark's controls: `POST /_fake/load?count=N&per_block=M` adds N chat messages to the
    /// users that registered, M to a block; `GET /_fake/state` tells where things are.
    private func control(_ request: ServerRequest) -> ServerResponse {
        let query = Self.query(request.uri)
        switch request.path {
        case "/_fake/load":
            let count = Int(query["count"] ?? "1000") ?? 1000
            let perBlock = max(1, Int(query["per_block"] ?? "100") ?? 100)
            let (users, service) = state.withLock { ($0.users, $0.service) }
            guard let service, !users.isEmpty else { return .json(.badRequest, ["error": "no registered users"]) }
            // Herald never decrypts chat messages (the app does), so the load carries stand-in bytes.
            let stand = AdamantTransaction.Chat(
                type: 1, message: String(repeating: "ab", count: 40), ownMessage: String(repeating: "cd", count: 24))
            for n in 0..<count {
                add(type: 8, from: service, to: users[n % users.count].address, chat: stand, newBlock: n % perBlock == 0)
            }
            return .json(.ok, ["added": .int(Int64(count)), "height": .int(height)])
        case "/_fake/state":
            var body: JSONObject = ["height": .int(height), "signals_caught_up": .bool(signalsCaughtUp)]
            if let extra = extraState.withLock({ $0 }) { for (key, value) in extra() { body[key] = value } }
            return .json(.ok, .object(body))
        default:
            return .json(.notFound, ["error": "unknown control"])
        }
    }

    private func reply(_ body: JSONObject) -> ServerResponse {
        var body = body
        body["nodeTimestamp"] = .int(Int64(Date().timeIntervalSince1970 - Self.epoch))
        return .json(.ok, .object(body))
    }

    static func query(_ uri: String) -> [String: String] {
        guard let mark = uri.firstIndex(of: "?") else { return [:] }
        var result: [String: String] = [:]
        for pair in uri[uri.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            result[parts[0]] = parts.count > 1 ? (parts[1].removingPercentEncoding ?? parts[1]) : ""
        }
        return result
    }

    /// The list endpoints: filters as the node applies them (joined with AND here, which is what
    /// the service's queries mean), newest first, paged.
    private func list(_ query: [String: String], chats: Bool) -> ServerResponse {
        let limit = Int(query["limit"] ?? "100") ?? 100
        let maxLimit = chats ? 100 : 1000
        guard limit <= maxLimit else {
            return reply(["success": false, "error": .string("Failed to get transactions: Invalid limit. Maximum is \(maxLimit)")])
        }
        let offset = Int(query["offset"] ?? "0") ?? 0
        var rows = state.withLock { $0.transactions }
        if chats {
            let includeTransfers = query["includeDirectTransfers"] == "1"
            rows = rows.filter { $0.type == 8 || (includeTransfers && $0.type == 0) }
            if let type = query["type"].flatMap(Int.init) {
                rows = rows.filter { $0.chat?.type == type }
            } else {
                rows = rows.filter { $0.chat?.type != 3 }
            }
            if let party = query["isIn"] ?? query["inId"] { rows = rows.filter { $0.recipientId == party || $0.senderId == party } }
            if let from = query["fromHeight"].flatMap(Int64.init) { rows = rows.filter { $0.height > from } }
        } else {
            if let type = (query["type"] ?? query["and:type"]).flatMap(Int.init) { rows = rows.filter { $0.type == type } }
            if let from = (query["fromHeight"] ?? query["and:fromHeight"]).flatMap(Int64.init) { rows = rows.filter { $0.height >= from } }
        }
        for key in ["senderId", "recipientId"] {
            if let value = query[key] { rows = rows.filter { (key == "senderId" ? $0.senderId : $0.recipientId) == value } }
        }
        rows.sort { ($0.timestamp, $0.id) > ($1.timestamp, $1.id) }
        let page = rows.dropFirst(offset).prefix(limit)
        return reply(["success": true, "count": .int(Int64(rows.count)), "transactions": .array(page.map(\.json))])
    }
}
