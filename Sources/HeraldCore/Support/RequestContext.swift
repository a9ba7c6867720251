package import Logging

/// The request a task is serving: its id (from `X-Request-Id`, or a new one) and its source (the
/// client that sent it, `RequestSource`), set by the HTTP server around each request, inherited by
/// the request's child tasks. The id is added to every log line written meanwhile by
/// `RequestContext.metadataProvider`; the source is whose share the request draws on wherever it
/// waits (the app's in-flight limit, an origin's connections: docs/operations.md, "Sources").
package enum RequestContext {
    package struct Current: Sendable {
        package var requestId: String
        package var source: RequestSource?

        package init(requestId: String, source: RequestSource? = nil) {
            self.requestId = requestId
            self.source = source
        }
    }

    @TaskLocal package static var current: Current?

    package static var requestId: String? { current?.requestId }
    package static var source: RequestSource? { current?.source }

    /// Adds `request_id` to log lines written while a request is being served.
    package static let metadataProvider = Logger.MetadataProvider {
        guard let id = requestId else { return [:] }
        return ["request_id": .string(id)]
    }

    /// An incoming `X-Request-Id` when it is 1–128 characters of letters, digits and `._:-`;
    /// anything else is replaced by a new id rather than echoed into logs and responses.
    package static func accept(_ value: String?) -> String? {
        guard let value, (1...128).contains(value.utf8.count),
            value.utf8.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x5F
                    || $0 == 0x3A || $0 == 0x2D
            })
        else { return nil }
        return value
    }
}
