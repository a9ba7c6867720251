import HeraldCore
import HeraldHTTPServer
import Testing

@testable import Gateway
@testable import HeraldHTTPServer

/// `herald serve` limits glibc's malloc arenas unless the operator set `MALLOC_ARENA_MAX`.
@Suite struct MallocArenasTests {
    @Test func heraldSetsTwoArenasUnlessTheEnvironmentSaysOtherwise() {
        #expect(MallocArenas.limit(environment: [:]) == 2)
        #expect(MallocArenas.limit(environment: ["PATH": "/usr/bin"]) == 2)
        #expect(MallocArenas.limit(environment: ["MALLOC_ARENA_MAX": "8"]) == nil)
    }
}
