package import HeraldCore
package import NIOCore

/// The APNs payload of a pusher without `default_payload`, written straight into the request's
/// body buffer: the same bytes as `APNsPayload.build` serialised with Python's separators, without
/// the `JSONObject` tree between them (docs/architecture.md, "Values on the notify path"). A pusher
/// with a `default_payload` merges it key by key, so its payload is still built as a tree, as is
/// one that must be cut to fit (`APNsTruncation`). `APNsPayloadWriterTests` and the notify fuzz
/// target hold the two to the same bytes.
package enum APNsPayloadWriter {
    package enum Result: Equatable, Sendable {
        /// The payload is in the buffer.
        case written
        /// Neither an alert nor a badge: nothing to send, and not a rejection.
        case nothingToSend
        /// The pusher has a `default_payload`: the payload is built as a tree (nothing written).
        case needsTree
    }

    /// Writes the payload `APNsPayload.build` makes for `n` and `device` into `out`.
    package static func write(
        _ n: PushNotification, device: Device, sendBadgeCounts: Bool, into out: inout ByteBuffer
    ) -> Result {
        guard device.data?["default_payload"] == nil else { return .needsTree }
        var object = ObjectWriter()
        if let eventId = n.eventId, !eventId.isEmpty, n.type?.isEmpty ?? true {
            // Event-id-only mode: the app fetches the event itself.
            object.open(into: &out)
            if let room = n.roomId, !room.isEmpty { object.string("room_id", room, into: &out) }
            object.string("event_id", eventId, into: &out)
            if sendBadgeCounts {
                if let unread = n.counts.unread { object.int("unread_count", unread, into: &out) }
                if let missed = n.counts.missedCalls { object.int("missed_calls", missed, into: &out) }
            }
            object.close(into: &out)
            return .written
        }
        let alert = APNsPayload.locKey(n)
        let badge = APNsPayload.badge(n, sendBadgeCounts: sendBadgeCounts)
        if alert == nil && badge == nil { return .nothingToSend }
        object.open(into: &out)
        object.key("aps", into: &out)
        var aps = ObjectWriter()
        aps.open(into: &out)
        if let (key, args) = alert {
            aps.key("alert", into: &out)
            var alertObject = ObjectWriter()
            alertObject.open(into: &out)
            alertObject.string("loc-key", key, into: &out)
            alertObject.key("loc-args", into: &out)
            out.writeInteger(UInt8(ascii: "["))
            for (index, arg) in args.enumerated() {
                if index > 0 { out.writeStaticString(", ") }
                JSONWriter.writeString(arg, into: &out)
            }
            out.writeInteger(UInt8(ascii: "]"))
            alertObject.close(into: &out)
            if let sound = device.sound, !sound.isEmpty { aps.string("sound", sound, into: &out) }
        }
        if let badge { aps.int("badge", badge, into: &out) }
        aps.close(into: &out)
        if alert != nil {
            if let room = n.roomId, !room.isEmpty { object.string("room_id", room, into: &out) }
            if let event = n.eventId, !event.isEmpty { object.string("event_id", event, into: &out) }
        }
        object.close(into: &out)
        return .written
    }

    /// One JSON object being written with Python's separators: `{"a": 1, "b": 2}`.
    private struct ObjectWriter {
        private var first = true

        func open(into out: inout ByteBuffer) { out.writeInteger(UInt8(ascii: "{")) }
        func close(into out: inout ByteBuffer) { out.writeInteger(UInt8(ascii: "}")) }

        /// `"key": `, after a separator unless it is the first.
        mutating func key(_ key: StaticString, into out: inout ByteBuffer) {
            if !first { out.writeStaticString(", ") }
            first = false
            out.writeInteger(UInt8(ascii: "\""))
            out.writeStaticString(key)
            out.writeStaticString("\": ")
        }

        mutating func string(_ key: StaticString, _ value: String, into out: inout ByteBuffer) {
            self.key(key, into: &out)
            JSONWriter.writeString(value, into: &out)
        }

        mutating func int(_ key: StaticString, _ value: Int64, into out: inout ByteBuffer) {
            self.key(key, into: &out)
            out.writeString(String(value))
        }
    }
}
