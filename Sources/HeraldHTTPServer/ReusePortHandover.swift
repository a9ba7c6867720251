import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Rolling restarts with `http.reuse_port` (docs/operations.md, "Rolling restart").
///
/// With `SO_REUSEPORT` a new Herald binds the same port while the old one still listens, and the
/// kernel spreads new connections over both. When a listener closes, the connections waiting in
/// its own accept queue are reset, so the old Herald must first stop being chosen: it attaches a
/// classic BPF program to the port's group that picks the socket at index 1, the one that joined
/// after it, then keeps accepting for the handover period (emptying its queue) and only then
/// closes. An index the group does not have falls back to the kernel's usual choice, so a lone
/// listener, or one left after the old one has gone, is unaffected.
enum ReusePortHandover {
    /// `SO_ATTACH_REUSEPORT_CBPF` (Linux, asm-generic/socket.h).
    static let attachReusePortCBPF: CInt = 51

    /// `struct sock_filter`.
    struct Instruction {
        var code: UInt16
        var jt: UInt8
        var jf: UInt8
        var k: UInt32
    }

    /// `struct sock_fprog`: the kernel copies the program during `setsockopt`.
    struct Program: @unchecked Sendable {
        var length: UInt16
        var instructions: UnsafeMutablePointer<Instruction>
    }

    /// Steers the port's new connections to the listener that joined after this one.
    static func steerToSuccessor(_ channel: any Channel) -> EventLoopFuture<Void> {
        #if os(Linux)
            guard let provider = channel as? any SocketOptionProvider else { return channel.eventLoop.makeSucceededVoidFuture() }
            let instructions = UnsafeMutablePointer<Instruction>.allocate(capacity: 1)
            instructions.initialize(to: Instruction(code: 0x06, jt: 0, jf: 0, k: 1))  // BPF_RET | BPF_K: return 1
            let program = Program(length: 1, instructions: instructions)
            let done = provider.unsafeSetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(attachReusePortCBPF), value: program)
            done.whenComplete { _ in program.instructions.deallocate() }
            return done
        #else
            return channel.eventLoop.makeSucceededVoidFuture()
        #endif
    }
}
