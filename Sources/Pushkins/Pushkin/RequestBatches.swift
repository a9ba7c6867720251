/// The requests of a provider that takes many tokens at once (legacy FCM, Huawei Push Kit): the
/// devices whose messages are equal share a request, in the order first seen, and a group larger
/// than `limit` is cut into requests of at most `limit` devices.
package func requestBatches<Message: Equatable>(_ ready: [(index: Int, message: Message)], limit: Int) -> [(
    message: Message, indices: [Int]
)] {
    var groups: [(message: Message, indices: [Int])] = []
    for (index, message) in ready {
        if let g = groups.firstIndex(where: { $0.message == message }) {
            groups[g].indices.append(index)
        } else {
            groups.append((message, [index]))
        }
    }
    return groups.flatMap { group in
        stride(from: 0, to: group.indices.count, by: limit).map { start in
            (group.message, Array(group.indices[start..<min(start + limit, group.indices.count)]))
        }
    }
}
