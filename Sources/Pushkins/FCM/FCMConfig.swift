package import HeraldCore
package import HeraldUpstream

/// The `type: gcm` app keys: Sygnal's (docs/compatibility/fcm.md, "Configuration") plus Herald's limits.
package struct FCMConfig: Sendable {
    package enum Credentials: Sendable {
        case v1(projectId: String, account: GoogleServiceAccount)
        case legacy(apiKey: String)
    }

    package var credentials: Credentials
    package var fcmOptions: JSONObject
    package var sendBadgeCounts: Bool
    /// Adds a visible `notification` block to v1 messages (Sygnal issue 366).
    package var visibleNotification: Bool
    /// `badge_priority`: a badge update's priority (`BadgePriority`).
    package var badgePriority: BadgePriority = .normal
    /// `fcm_target`: whether a pushkey is sent as `message.token` or `message.fid` (`FCMTarget`).
    package var target: FCMTarget.Rule = .auto
    package var baseURL: String
    package var upstream: UpstreamSettings
    package var retry: RetryPolicy

    package var version: FCMData.APIVersion {
        if case .legacy = credentials { return .legacy }
        return .v1
    }

    package static func read(_ config: ConfigSection, environment: PushkinEnvironment) -> FCMConfig? {
        let diagnostics = config.diagnostics
        var version = FCMData.APIVersion.v1
        if let raw = config.string("api_version") {
            guard let parsed = FCMData.APIVersion(rawValue: raw) else {
                diagnostics.error(config.keyPath("api_version"), "must be v1 or legacy, got '\(raw)'")
                return nil
            }
            version = parsed
        } else {
            environment.logger.notice(
                "api_version is not set: using the FCM HTTP v1 API (Google switched the legacy API off in 2024)",
                metadata: ["key": "\(config.keyPath("api_version"))"])
        }
        let options = config.jsonObject("fcm_options") ?? [:]
        let badges = config.bool("send_badge_counts", default: true)
        let visible = config.bool("visible_notification", default: false)
        let badgePriority = BadgePriority.read(config)
        var target = FCMTarget.Rule.auto
        if let raw = config.string("fcm_target") {
            if let rule = FCMTarget.Rule(rawValue: raw) {
                target = rule
            } else {
                diagnostics.error(config.keyPath("fcm_target"), "must be auto, token or fid, got '\(raw)'")
            }
        }
        var baseURL = config.string("base_url") ?? "https://fcm.googleapis.com"
        if baseURL.hasSuffix("/") { baseURL.removeLast() }
        let upstream = UpstreamSettings.read(from: config, proxy: environment.proxy, multiplexed: true)
        let retry = RetryPolicy.read(from: config)

        let credentials: Credentials
        switch version {
        case .legacy:
            config.accept("project_id", "service_account_file", "token_uri")
            guard let key = config.string("api_key", required: true), !key.isEmpty else { return nil }
            environment.logger.warning(
                "FCM's legacy API is switched off by Google (it answers 404): this app cannot deliver; move it to api_version: v1")
            credentials = .legacy(apiKey: key)
        case .v1:
            config.accept("api_key")
            let project = config.string("project_id", required: true)
            let file = config.readableFile("service_account_file", required: true)
            let tokenURI = config.string("token_uri")
            guard let project, !project.isEmpty, let file else { return nil }
            // The id is a segment of every request's path (`/v1/projects/<id>/messages:send`): a
            // character that would end or break the segment is refused here, not on each push.
            guard project.utf8.allSatisfy(Self.isProjectIdByte) else {
                diagnostics.error(
                    config.keyPath("project_id"),
                    "not a Firebase project id (letters, digits and - . : _ only): \(project.debugDescription)")
                return nil
            }
            do {
                var account = try GoogleServiceAccount.load(path: file)
                if let uri = tokenURI, !uri.isEmpty { account.tokenURI = uri }
                credentials = .v1(projectId: project, account: account)
            } catch {
                diagnostics.error(config.keyPath("service_account_file"), "\(error)")
                return nil
            }
        }
        return FCMConfig(
            credentials: credentials, fcmOptions: options, sendBadgeCounts: badges, visibleNotification: visible,
            badgePriority: badgePriority, target: target, baseURL: baseURL, upstream: upstream, retry: retry)
    }

    /// A byte of a project id: Google's ids are lower-case letters, digits and `-`, and older
    /// domain-scoped ones carry `.` and `:`.
    static func isProjectIdByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "_")
        }
    }
}
