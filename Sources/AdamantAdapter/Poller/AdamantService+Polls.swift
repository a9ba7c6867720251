import DeliveryRecord
import HeraldCore
import Logging
import Pushkins

/// The three polls of an ADAMANT service and the batch they hand on: registration signals, chat
/// transactions and transfers, each read from its cursor, pushed, and committed with its next
/// cursor (docs/adamant.md).
extension AdamantService {
    /// Signals to the service's address above `cursor`, applied in chain order.
    func pollSignals(_ cursor: Int64) async throws -> Int64 {
        var query = [("orderBy", "timestamp:desc"), ("isIn", keys.address), ("type", "3")]
        if cursor > 0 { query.append(("fromHeight", String(cursor))) }
        let batch = try await nodes.transactions("/api/chats/get", query: query).filter { $0.recipientId == keys.address }
        guard let top = batch.map(\.height).max() else { return cursor }
        var changes: [DeviceChange] = []
        for transaction in batch.sorted(by: AdamantTransaction.chainOrder) {
            do {
                changes.append(try SignalDecoder.decode(transaction, service: keys))
            } catch {
                count(MetricName.adamantSignals, ("result", "invalid"))
                logger.info(
                    "ADAMANT signal skipped",
                    metadata: ["transaction": "\(transaction.id)", "sender": "\(transaction.senderId)", "why": "\(error)"])
            }
        }
        try await store.apply(changes, worker: "signals", cursor: top)
        for change in changes {
            switch change.action {
            case .add: count(MetricName.adamantSignals, ("result", "add"))
            case .remove: count(MetricName.adamantSignals, ("result", "remove"))
            }
        }
        return top
    }

    /// Chat transactions (every chat type but signals) above `cursor`; the node's height filter on
    /// chats is strict.
    func pollChats(_ cursor: Int64) async throws -> Int64 {
        var query = [("orderBy", "timestamp:desc")]
        if cursor > 0 { query.append(("fromHeight", String(cursor))) }
        let batch = try await nodes.transactions("/api/chats/get", query: query).filter { $0.chat != nil && $0.chat?.type != 3 }
        return try await push(batch, kind: .chat, worker: "chats", cursor: cursor)
    }

    /// Transfers above `cursor`; the node's height filter on transactions is inclusive.
    func pollTransfers(_ cursor: Int64) async throws -> Int64 {
        var query = [("orderBy", "timestamp:desc"), ("type", "0")]
        if cursor > 0 { query.append(("and:fromHeight", String(cursor + 1))) }
        let batch = try await nodes.transactions("/api/transactions", query: query).filter { $0.type == 0 }
        return try await push(batch, kind: .transfer, worker: "transfers", cursor: cursor)
    }

    // MARK: pushing a batch

    /// Pushes a batch and moves the cursor to just below its top block: the top block is read again
    /// by the next poll, so that one seen while its transactions were still arriving is completed
    /// (the pushed keys make the replay push nothing twice). Rows a page returned twice (the chain
    /// grew between pages) are pushed once.
    func push(_ fetched: [AdamantTransaction], kind: AdamantPusher.Kind, worker: String, cursor: Int64) async throws -> Int64 {
        var seen: Set<String> = []
        let batch = fetched.filter { seen.insert($0.id).inserted }
        guard let top = batch.map(\.height).max() else { return cursor }
        let next = max(cursor, top - 1)
        let devices = try await store.devices(addresses: Array(Set(batch.map(\.recipientId))))
        var byAddress: [String: [RegisteredDevice]] = [:]
        for device in devices { byAddress[device.address, default: []].append(device) }
        var jobs: [(key: String, transaction: AdamantTransaction, device: RegisteredDevice)] = []
        for transaction in batch.sorted(by: AdamantTransaction.chainOrder) {
            for device in byAddress[transaction.recipientId] ?? [] {
                jobs.append(("\(transaction.id):\(device.provider.rawValue):\(device.token)", transaction, device))
            }
        }
        let done = try await store.pushed(among: jobs.map(\.key))
        jobs.removeAll { done.contains($0.key) }
        // Pushed only by the lease holder, proved just before (a commit after a hand-over is refused too).
        if !jobs.isEmpty { try await store.confirmLease() }

        var finished: [String] = []
        var temporary = 0
        let outcomes = await dispatcher.deliver(jobs, limit: config.maxConcurrentPushes, logger: logger) { job in
            // Traced under the transaction's id (`herald trace --event-id`), each device under its token.
            let start = TraceStart(eventId: job.transaction.id, frontEnd: "adamant", appId: "", pushkey: job.device.token)
            return await self.dispatcher.traced(start) {
                let result = await self.pusher.push(job.transaction, kind: kind, to: job.device, logger: self.logger)
                if case .failed = result.outcome {} else { await self.mark(job.key) }
                return Dispatcher.Delivery(result, pushkin: self.pusher.sender(job.device.provider).name, token: job.device.token)
            }
        }
        for (job, outcome) in zip(jobs, outcomes) {
            count(MetricName.adamantPushes, ("kind", kind.rawValue), ("outcome", outcome.label))
            switch outcome {
            case .failed:
                temporary += 1
            case .rejected where outcome.tokenShouldBeDropped:
                finished.append(job.key)
                let removed = try await store.remove(token: job.device.token, provider: job.device.provider)
                counters.increment(MetricName.adamantTokensRemoved, by: Int64(removed))
                logger.info(
                    "ADAMANT device token removed",
                    metadata: ["token": "\(Redaction.pushkey(job.device.token))", "reason": "\(outcome.reason?.label ?? "")"])
            case .delivered, .rejected, .dropped, .skipped:
                finished.append(job.key)
            }
        }

        let attempts = batchAttempts.withLock { table -> Int in
            table[worker, default: 0] += temporary > 0 ? 1 : 0
            return table[worker, default: 0]
        }
        if temporary > 0 && attempts < config.maxBatchAttempts {
            // Keep the cursor: the next poll sends what failed (and only that) again.
            try await store.commit(pushed: finished, worker: worker, cursor: cursor, keep: config.recentPushes)
            throw PushesPending(count: temporary)
        }
        if temporary > 0 {
            logger.error("ADAMANT pushes given up after retries", metadata: ["worker": "\(worker)", "count": "\(temporary)"])
            counters.increment(MetricName.adamantPushesGivenUp, by: Int64(temporary))
        }
        batchAttempts.withLock { $0[worker] = 0 }
        if !finished.isEmpty || next != cursor {
            try await store.commit(pushed: finished, worker: worker, cursor: next, keep: config.recentPushes)
        }
        return next
    }

    /// Records one push as done the moment its service answered, so that a poller killed before the
    /// batch's commit does not send it again (docs/adamant.md, "Several instances"). A mark that
    /// fails is made again by the commit; only a kill in between sends the push twice.
    func mark(_ key: String) async {
        do {
            try await store.markPushed([key])
        } catch {
            logger.debug("ADAMANT push not marked at once; the batch's commit records it", metadata: ["error": "\(error)"])
        }
    }

    struct PushesPending: Error, CustomStringConvertible {
        let count: Int
        var description: String { "\(count) push(es) failed for now; retried on the next poll" }
    }
}
