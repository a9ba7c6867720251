// swift-tools-version:6.1
import Foundation
import PackageDescription

/// CI builds Herald's own non-test targets with warnings as errors (`HERALD_WERROR=1`).
/// Dependencies keep their warnings, and so do test targets: Swift Testing's macro expansions warn
/// on this toolchain (`@const` / `@section`) in code that is not ours.
let strict: [SwiftSetting] =
    ProcessInfo.processInfo.environment["HERALD_WERROR"] == "1" ? [.unsafeFlags(["-warnings-as-errors"])] : []

/// On Linux, `herald` is linked by LLD (shipped with the toolchain) with packed relative
/// relocations (DT_RELR, glibc 2.36 and later). Gold's 2 MiB relocation table, read by the dynamic
/// loader at every start, becomes 0.5 MiB: an idle Herald is about 3 MiB smaller in resident memory.
/// LLD also lays out first, together, the functions that start-up and the request paths run
/// (scripts/herald.order, made by bench/order.sh); with one section per function, as
/// scripts/release-build.sh compiles, far less of the binary becomes resident (docs/operations.md,
/// "Memory"). Without function sections the order has nothing to move, and nothing changes.
/// scripts/herald.ld puts the functions Swift emits without a symbol, which the order cannot name,
/// together in front of the ordered ones.
let compactLayout: [LinkerSetting] = [
    .unsafeFlags(
        [
            "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
            "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/scripts/herald.order",
            "-Xlinker", "--no-warn-symbol-ordering",
            "-Xlinker", "-T", "-Xlinker", "\(Context.packageDirectory)/scripts/herald.ld",
        ], .when(platforms: [.linux]))
]

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    // One product: the modules are layers of one program, reached across with `package` access
    // (docs/architecture.md, "Modules"), not libraries with a public API.
    products: [
        .executable(name: "herald", targets: ["herald"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // OTLP over HTTP only: the gRPC exporter's dependencies are not built.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // The core: JSON, the config reader, notifications, outcomes and their reasons, and the
        // primitives everything shares. No HTTP.
        .target(
            name: "HeraldCore",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // The one path of an upstream call: retries and deadlines, the connector and its address
        // policy, the HTTP/1.1 and HTTP/2 transports.
        .target(
            name: "HeraldUpstream",
            dependencies: [
                "HeraldCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The delivery record: the repeat guard, the memory and PostgreSQL records side by side,
        // the delivery trace, and their setup from `notify:`.
        .target(
            name: "DeliveryRecord",
            dependencies: [
                "HeraldCore",
                "HeraldUpstream",
                "HeraldPostgres",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The providers, one folder each, and the registry that builds them from `apps:`.
        .target(
            name: "Pushkins",
            dependencies: [
                "HeraldCore",
                "HeraldUpstream",
                "DeliveryRecord",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The HTTP/1.1 server: connections, limits, routes and their error dialects.
        .target(
            name: "HeraldHTTPServer",
            dependencies: [
                "HeraldCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "HeraldSQLite",
            dependencies: [.product(name: "GRDB", package: "GRDB.swift")]
        ),
        .target(
            name: "HeraldPostgres",
            dependencies: [
                "HeraldCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .systemLibrary(
            name: "CSecp256k1",
            pkgConfig: "libsecp256k1",
            providers: [.apt(["libsecp256k1-dev"])]
        ),
        .target(
            name: "StatusAdapter",
            dependencies: [
                "HeraldCore",
                "HeraldUpstream",
                "DeliveryRecord",
                "Pushkins",
                "HeraldPostgres",
                "HeraldSQLite",
                "CSecp256k1",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["Protobuf/proto"]
        ),
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .target(
            name: "AdamantAdapter",
            dependencies: [
                "HeraldCore",
                "HeraldUpstream",
                "DeliveryRecord",
                "Pushkins",
                "HeraldPostgres",
                "HeraldSQLite",
                "CSodium",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "Gateway",
            dependencies: [
                "HeraldCore",
                "HeraldUpstream",
                "HeraldHTTPServer",
                "DeliveryRecord",
                "Pushkins",
                "StatusAdapter",
                "AdamantAdapter",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ]
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "Gateway",
                "HeraldCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            linkerSettings: compactLayout
        ),
        .target(
            name: "HeraldTestSupport",
            dependencies: [
                "HeraldCore",
                "HeraldHTTPServer",
                "Pushkins",
                "AdamantAdapter",
                "Gateway",
                "StatusAdapter",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .executableTarget(
            name: "herald-fakes",
            dependencies: [
                "HeraldTestSupport", "HeraldCore", "HeraldUpstream", "Pushkins", "StatusAdapter", "AdamantAdapter",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"), .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(name: "herald-fuzz", dependencies: ["Gateway"]),
        // The benchmark's floor rows (bench/run.sh): bare SwiftNIO clients and the cryptography alone.
        .executableTarget(
            name: "bench-floor",
            dependencies: [
                "StatusAdapter",
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "bench-hello",
            dependencies: [
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "PushkinsTests",
            dependencies: [
                "HeraldCore", "HeraldHTTPServer", "HeraldUpstream", "Pushkins", "HeraldTestSupport",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "StatusAdapterTests",
            dependencies: [
                "StatusAdapter", "HeraldCore", "HeraldUpstream", "DeliveryRecord", "Pushkins", "HeraldTestSupport", "HeraldPostgres",
                "HeraldSQLite",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "AdamantAdapterTests",
            dependencies: [
                "AdamantAdapter", "HeraldCore", "HeraldUpstream", "Pushkins", "HeraldTestSupport", "HeraldSQLite",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "HeraldCore", "HeraldUpstream", "HeraldHTTPServer", "DeliveryRecord", "Pushkins", "HeraldTestSupport",
                "AdamantAdapter",
                "StatusAdapter",
                "HeraldPostgres",
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Yams", package: "Yams"),
            ],
            resources: [.copy("Fixtures")]
        ),
    ]
)

/// Imports are `internal` unless written otherwise (as in Hummingbird 2): a module another one
/// sees through a file's `package` declarations is imported `package import` there, so what a
/// module exposes of its dependencies is written down, and the compiler checks it.
let internalImports: [SwiftSetting] = [.enableUpcomingFeature("InternalImportsByDefault")]

for target in package.targets where target.type != .system && target.type != .test {
    target.swiftSettings = (target.swiftSettings ?? []) + internalImports + strict
}
