import HeraldCore

/// `notify.sources`: an optional rate of notifies per source (docs/operations.md, "Sources"), a
/// default and overrides for known networks (a large homeserver's, a vendor's). A source past its
/// rate is answered 429 with `Retry-After` before its body is read into a notification.
struct SourceRates: Sendable {
    struct Rate: Sendable, Equatable {
        var perSecond: Int
        var burst: Int
    }

    /// The rate of a source in no listed network (0 a second: none).
    var standard = Rate(perSecond: 0, burst: 100)
    /// Listed networks, the most specific first.
    var networks: [(network: IPNetwork, rate: Rate)] = []

    var isEmpty: Bool { standard.perSecond == 0 && networks.isEmpty }

    func rate(of source: RequestSource) -> Rate {
        networks.first { source.isIn($0.network) }?.rate ?? standard
    }

    static func read(_ section: ConfigSection) -> SourceRates {
        var rates = SourceRates()
        rates.standard = Rate(
            perSecond: section.int("rate", default: 0, range: 0...1_000_000),
            burst: section.int("burst", default: 100, range: 1...10_000_000))
        if let networks = section.map("networks") {
            for key in networks.keys {
                guard let network = IPNetwork(key) else {
                    networks.diagnostics.error(networks.keyPath(key), "not an address or a CIDR network")
                    _ = networks.raw(key)
                    continue
                }
                guard let entry = networks.map(key) else { continue }
                let rate = Rate(
                    perSecond: entry.int("rate", default: rates.standard.perSecond, range: 0...1_000_000),
                    burst: entry.int("burst", default: rates.standard.burst, range: 1...10_000_000))
                entry.warnUnknownKeys()
                rates.networks.append((network, rate))
            }
            rates.networks.sort { $0.network.prefix > $1.network.prefix }
        }
        section.warnUnknownKeys()
        return rates
    }
}

/// What `notify.sources` keeps: each source's bucket.
final class SourceRateLimiter: Sendable {
    let rates: SourceRates
    private let buckets = TokenBuckets<RequestSource>()

    init(rates: SourceRates) { self.rates = rates }

    /// Takes one notify's worth for `source`: nil when it may go, else how long until it may.
    func take(_ source: RequestSource, now: HeraldInstant) -> Duration? {
        let rate = rates.rate(of: source)
        return buckets.take(source, now: now, perSecond: Double(rate.perSecond), burst: rate.burst)
    }
}
