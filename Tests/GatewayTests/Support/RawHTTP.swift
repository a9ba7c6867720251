import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking raw TCP client, for requests no HTTP client library will send as-is.
enum RawHTTP {
    /// Runs `exchange` on its own thread (`offPool`).
    static func exchangeOffPool(port: Int, head: String, chunks: [[UInt8]] = [], waitFirst: Bool = false, sendAll: Bool = false) async
        -> String
    {
        await offPool { exchange(port: port, head: head, chunks: chunks, waitFirst: waitFirst, sendAll: sendAll) }
    }

    /// Sends `head`, then `chunks` (stopping once the server has answered, unless `sendAll`; with
    /// `waitFirst`, only once the server has answered something, as a client expecting 100 does),
    /// and returns what the server sent back before closing (or after 15 s).
    static func exchange(port: Int, head: String, chunks: [[UInt8]] = [], waitFirst: Bool = false, sendAll: Bool = false) -> String {
        let fd = connectLoopback(port: port)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = Array(head.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if waitFirst {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, 5000)
        }
        for chunk in chunks {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if !sendAll && !waitFirst && poll(&poller, 1, 0) > 0 { break }  // the server has answered
            let sent = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 { break }
        }
        return readToEnd(fd)
    }

    /// Sends `head` on `fd` (a socket from `openIdle`), and returns what the server sent back
    /// before closing (or after 15 s); closes `fd`. On a thread of its own, as `exchangeOffPool`.
    static func sendOffPool(fd: Int32, head: String) async -> String {
        await offPool {
            defer { close(fd) }
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = Array(head.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return readToEnd(fd)
        }
    }

    /// Sends `request` on `fd` and returns the first answer bytes that arrive within 60 s, leaving
    /// the connection open (for a short answer, such as `/health`'s, that is the whole answer).
    static func firstAnswer(fd: Int32, request: String) -> String {
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 60_000) > 0 else { return "" }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
    }

    /// What arrives on `fd` until the peer closes (or the receive timeout).
    private static func readToEnd(_ fd: Int32) -> String { readUntilClosed(fd).text }

    /// What the server sent, and whether it closed the connection (false: the 15 s receive
    /// timeout, or an error, ended the read).
    private static func readUntilClosed(_ fd: Int32) -> (text: String, closedByServer: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return (String(decoding: received, as: UTF8.self), n == 0) }
            received.append(contentsOf: buffer[0..<n])
        }
    }

    /// Sends `head` and reads until the server closes the connection (or 15 s pass): what it
    /// sent, and whether it was the server that ended the exchange. On a thread of its own.
    static func exchangeUntilClosedOffPool(port: Int, head: String) async -> (text: String, closedByServer: Bool) {
        await offPool {
            let fd = connectLoopback(port: port)
            guard fd >= 0 else { return ("", false) }
            defer { close(fd) }
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = Array(head.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return readUntilClosed(fd)
        }
    }

    /// A connected socket that sends nothing (an idle client); close it with `close(_:)`.
    static func openIdle(port: Int) -> Int32 { connectLoopback(port: port) }

    /// A socket connected to 127.0.0.1:`port` (its receive buffer set first, when given), or -1.
    static func connectLoopback(port: Int, receiveBuffer: Int? = nil) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return -1
        }
        return fd
    }
}
