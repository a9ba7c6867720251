import NIOCore

extension ByteBuffer {
    /// Appends `chunk` to an upstream response's body (`HTTP2ResponseReader`,
    /// `HTTP1ExchangeStateMachine`) while it holds fewer than `maxBytes`, the rest read and
    /// dropped. The first chunk of a body that fits is kept as it is, without a copy: a response that
    /// comes in one read costs no buffer of its own.
    mutating func keep(_ chunk: ByteBuffer, upTo maxBytes: Int) {
        let room = maxBytes - readableBytes
        guard room > 0 else { return }
        if readableBytes == 0, chunk.readableBytes <= room {
            self = chunk
            return
        }
        var chunk = chunk
        if var slice = chunk.readSlice(length: min(room, chunk.readableBytes)) { writeBuffer(&slice) }
    }
}
