import HeraldCore

/// Finds the pushkin for an app id as Sygnal does (docs/compatibility/matrix.md, "App ids"): an
/// exact key first, then every key as a case-sensitive anchored glob; zero or several glob matches
/// mean no pushkin.
package struct AppIdRouter: Sendable {
    package enum Route: Sendable {
        case pushkin(any Pushkin)
        case unknown
        case ambiguous([String])
    }

    private let exact: [String: any Pushkin]
    private let globs: [(Glob, any Pushkin)]

    package init(pushkins: [any Pushkin]) {
        var exact: [String: any Pushkin] = [:]
        for pushkin in pushkins { exact[pushkin.name] = pushkin }
        self.exact = exact
        self.globs = pushkins.filter { Glob($0.name).hasWildcards }.map { (Glob($0.name), $0) }
    }

    /// The app ids routed by name, not by a glob: what a device's `app_id` usually is.
    package var exactAppIds: [String] {
        exact.keys.filter { !Glob($0).hasWildcards }
    }

    package func route(_ appId: String) -> Route {
        if let pushkin = exact[appId] { return .pushkin(pushkin) }
        let matches = globs.filter { $0.0.matches(appId) }
        switch matches.count {
        case 0: return .unknown
        case 1: return .pushkin(matches[0].1)
        default: return .ambiguous(matches.map(\.1.name))
        }
    }
}
