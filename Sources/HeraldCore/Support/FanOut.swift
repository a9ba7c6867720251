import Synchronization

/// Herald's one bounded fan-out (docs/architecture.md, "Dispatch"): `body` runs for every item,
/// concurrently, and the results come back in item order.
///
/// - `limit`: at most this many run at once (all at once when nil); the next starts as one ends.
/// - `admission`: a limiter shared beyond this call (an upstream's queue); each item holds one of
///   its permits while it runs, taken in arrival order within the request's source and in turn
///   between sources (`AdmissionQueue`).
///
/// An item that cannot start because its task was cancelled while it waited, or because it waited
/// longer than the admission's `maxWait`, gets `notStarted`.
/// Each item's child task is freed as it finishes (a discarding group), so items that wait do not
/// keep the finished ones' memory. The last item runs in the caller's task, beside the others'
/// child tasks (a task costs allocations and its frames' slabs); one item alone runs there without
/// a group.
package func fanOut<Item: Sendable, Result: Sendable>(
    _ items: [Item], limit: Int? = nil, admission: AsyncLimiter? = nil, notStarted: Result,
    _ body: @escaping @Sendable (Item) async -> Result
) async -> [Result] {
    guard let last = items.indices.last else { return [] }
    if items.count == 1 { return [await admitted(admission, notStarted: notStarted) { await body(items[0]) }] }
    let window = limit.flatMap { $0 < items.count ? AsyncLimiter(limit: $0) : nil }
    if window == nil && admission == nil {
        return await withTaskGroup(of: (Int, Result).self) { group in
            for (index, item) in items.enumerated() where index != last {
                group.addTask { (index, await body(item)) }
            }
            var results = [Result](repeating: notStarted, count: items.count)
            results[last] = await body(items[last])
            for await (index, result) in group { results[index] = result }
            return results
        }
    }
    let results = FanOutSlots(count: items.count, filler: notStarted)
    await withDiscardingTaskGroup { group in
        for (index, item) in items.enumerated() {
            do {
                try await window?.acquire()
            } catch {
                continue
            }
            do {
                try await admission?.acquire(turn: RequestContext.source)
            } catch {
                window?.release()
                continue
            }
            guard index != last else {
                results.set(index, await body(item))
                admission?.release()
                window?.release()
                continue
            }
            group.addTask {
                let result = await body(item)
                admission?.release()
                window?.release()
                results.set(index, result)
            }
        }
    }
    return results.all
}

/// `body` in the caller's task, holding one of `admission`'s permits while it runs; `notStarted`
/// when the task was cancelled while it waited, or waited longer than the limiter allows. A fan-out of one item is this, and a caller that
/// has one item calls it directly: its closure is not escaping, so it is not allocated.
package func admitted<Result>(_ admission: AsyncLimiter?, notStarted: Result, _ body: () async -> Result) async -> Result {
    guard let admission else { return await body() }
    do {
        try await admission.acquire(turn: RequestContext.source)
    } catch {
        return notStarted
    }
    defer { admission.release() }
    return await body()
}

/// The results of a fan-out, written by its tasks as they finish.
private final class FanOutSlots<Result: Sendable>: Sendable {
    private let slots: Mutex<[Result]>

    init(count: Int, filler: Result) { slots = Mutex([Result](repeating: filler, count: count)) }

    func set(_ index: Int, _ result: Result) { slots.withLock { $0[index] = result } }

    var all: [Result] { slots.withLock { $0 } }
}
