import Foundation
import Gateway

// `herald-fuzz`: Herald's parsers under libFuzzer (docs/fuzzing.md). `scripts/fuzz.sh` builds it
// with `-sanitize=fuzzer -D HERALD_FUZZ`, and libFuzzer's `main` runs the target named by
// `HERALD_FUZZ_TARGET`. Built normally, it replays files instead:
// `herald-fuzz <target> <file or directory>...`, which is how a finding is reproduced.

#if HERALD_FUZZ
    private let target: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["HERALD_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            fatalError("HERALD_FUZZ_TARGET must be one of \(FuzzTarget.allCases.map(\.rawValue))")
        }
        return target
    }()

    @_cdecl("LLVMFuzzerTestOneInput")
    package func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        target.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    }

    /// libFuzzer's documented driver. Declared by name: the executable exports no symbols for
    /// `dlsym`, and this keeps the target free of a C shim.
    @_silgen_name("LLVMFuzzerRunDriver")
    func runDriver(
        _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// SwiftPM names the executable's entry point itself, so libFuzzer is started from it.
    @main
    struct Fuzz {
        static func main() {
            var argc = CommandLine.argc
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
            exit(runDriver(&argc, &argv, fuzzOne))
        }
    }
#else
    @main
    struct Replay {
        static func main() throws {
            let arguments = CommandLine.arguments.dropFirst()
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
                print("usage: herald-fuzz <\(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|"))> <file or directory>...")
                exit(2)
            }
            var count = 0
            for path in arguments.dropFirst() {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
                let files =
                    isDirectory.boolValue
                    ? try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { "\(path)/\($0)" } : [path]
                for file in files {
                    target.run([UInt8](try Data(contentsOf: URL(fileURLWithPath: file))))
                    count += 1
                }
            }
            print("\(target.rawValue): \(count) inputs replayed")
        }
    }
#endif
