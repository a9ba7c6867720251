import Foundation
import SwiftProtobuf

/// Query (18 → 19): which installations of a key are registered here (docs/status-protocol.md).
extension StatusServer {
    func answer(_ query: Query, messageId: [UInt8]) async -> QueryResponse {
        var response = QueryResponse()
        response.messageID = Data(messageId)
        guard !query.publicKeys.isEmpty else { return response }
        let keys = query.publicKeys.prefix(config.maxQueryKeys).map { [UInt8]($0) }
        let rows: [StoredRegistration]
        do {
            rows = try await store.registrations(publicKeys: keys)
        } catch {
            logger.error("Status store read failed", metadata: ["error": "\(error)"])
            return response
        }
        for row in rows {
            guard let blob = row.registration, let registration = try? Registration(serializedBytes: blob) else { continue }
            var info = QueryInfo()
            info.publicKey = Data(row.publicKey)
            info.grant = registration.grant
            info.version = registration.version
            info.installationID = registration.installationID
            if registration.allowFromContactsOnly {
                info.allowedKeyList = registration.allowedKeyList
            } else {
                info.accessToken = registration.accessToken
            }
            response.info.append(info)
        }
        response.success = true
        return response
    }
}
