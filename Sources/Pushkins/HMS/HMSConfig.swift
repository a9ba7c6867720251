import FoundationEssentials
package import HeraldCore
package import HeraldUpstream

/// The `type: hms` app keys (docs/compatibility/hms.md, "Configuration"): Huawei Push Kit for
/// Android phones with HMS Core (`api: android`, OAuth) or for HarmonyOS (`api: harmony`,
/// service-account JWT).
package struct HMSConfig: Sendable {
    package enum Credentials: Sendable {
        case android(appId: String, appSecret: String, tokenURL: String)
        case harmony(projectId: String, account: HMSServiceAccount)
    }

    /// HarmonyOS's scenario, the `push-type` header (docs/compatibility/hms.md, "Push types").
    package enum PushType: String, Sendable, CaseIterable {
        /// 0: a notification the system shows, with the app's generic title and body.
        case alert
        /// 2: the notification-extension subprocess: the app fetches the event and writes the
        /// notification itself. Only for apps that hold Huawei's right to it.
        case `extension`
        /// 6: data for the app, delivered only while it is in the foreground (cached until it next
        /// starts otherwise), low priority and rate-limited.
        case background

        package var header: String {
            switch self {
            case .alert: return "0"
            case .extension: return "2"
            case .background: return "6"
            }
        }

        /// What `check-config` says of choosing this type for `key`.
        func explanation(for key: String) -> String {
            let pushes = key == "event_id_only_push_type" ? "event_id_only pushes" : "full pushes"
            switch self {
            case .alert:
                return
                    "\(pushes) are notifications the system shows (push-type 0), with the app's title and body, the room as notifyId and the unread count as the badge"
            case .extension:
                return
                    "\(pushes) start the app's notification extension (push-type 2), which fetches the event and writes the text; the app must hold Huawei's notification-extension right, or Push Kit refuses every push (noPushTypeRight)"
            case .background:
                return
                    "\(pushes) are background messages (push-type 6): Huawei hands them to the app only while it is in the foreground and keeps them until it next starts otherwise, at low priority and about two an hour, so a message may go unseen until the user opens the app"
            }
        }
    }

    package var credentials: Credentials
    package var baseURL: String
    package var upstream: UpstreamSettings
    package var retry: RetryPolicy
    package var sendBadgeCounts: Bool
    /// Android: merged into `message.android` (`urgency`, `ttl`, `category`, `notification`…).
    package var androidOptions: JSONObject
    /// `badge_priority`: a badge update's `urgency` (`BadgePriority`).
    package var badgePriority: BadgePriority = .normal
    /// HarmonyOS: the scenario of full notifications, and of `event_id_only` ones.
    package var pushType: PushType
    package var eventIdOnlyPushType: PushType
    /// HarmonyOS alerts: `notification.category`, and the text shown (the notification's content
    /// is never put there: it stays between the homeserver and the app).
    package var category: String
    package var title: String
    package var body: String
    /// Offline cache time in seconds (`ttl` for Android, `pushOptions.ttl` for HarmonyOS).
    package var ttl: Int

    package var api: String {
        if case .android = credentials { return "android" }
        return "harmony"
    }

    package static let defaultBaseURL = "https://push-api.cloud.huawei.com"
    package static let defaultTokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    package static func read(_ config: ConfigSection, environment: PushkinEnvironment) -> HMSConfig? {
        let diagnostics = config.diagnostics
        let api = config.string("api") ?? "android"
        var baseURL = config.string("base_url") ?? defaultBaseURL
        if baseURL.hasSuffix("/") { baseURL.removeLast() }
        let upstream = UpstreamSettings.read(from: config, proxy: environment.proxy, multiplexed: true)
        let retry = RetryPolicy.read(from: config)
        let badges = config.bool("send_badge_counts", default: true)
        let ttl = config.int("ttl", default: 86_400, range: 0...1_296_000)
        let androidOptions = config.jsonObject("android_options") ?? [:]
        let badgePriority = BadgePriority.read(config)
        let category = config.string("category") ?? "IM"
        let title = config.string("title") ?? "New message"
        let body = config.string("body") ?? "You have a new message"
        func pushType(_ key: String) -> PushType? {
            let parsed: PushType
            if let raw = config.string(key) {
                guard let known = PushType(rawValue: raw) else {
                    diagnostics.error(config.keyPath(key), "must be alert, extension or background, got '\(raw)'")
                    return nil
                }
                parsed = known
            } else {
                parsed = .alert
            }
            if api == "harmony" { diagnostics.note(config.keyPath(key), parsed.explanation(for: key)) }
            return parsed
        }

        let full = pushType("push_type")
        let idOnly = pushType("event_id_only_push_type")

        let credentials: Credentials
        switch api {
        case "android":
            config.accept("service_account_file", "project_id")
            let appId = config.string("app_id", required: true)
            let secretFile = config.readableFile("app_secret_file", required: true)
            let tokenURL = config.string("token_url") ?? defaultTokenURL
            guard let appId, !appId.isEmpty, let secretFile else { return nil }
            let secret = ((try? String(contentsOfFile: secretFile, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else {
                diagnostics.error(config.keyPath("app_secret_file"), "'\(secretFile)' holds no secret")
                return nil
            }
            credentials = .android(appId: appId, appSecret: secret, tokenURL: tokenURL)
        case "harmony":
            config.accept("app_id", "app_secret_file", "token_url", "android_options")
            let file = config.readableFile("service_account_file", required: true)
            let project = config.string("project_id")
            guard let file else { return nil }
            let account: HMSServiceAccount
            do {
                account = try HMSServiceAccount.load(path: file)
            } catch {
                diagnostics.error(config.keyPath("service_account_file"), "\(error)")
                return nil
            }
            guard let project = project ?? account.projectId, !project.isEmpty else {
                diagnostics.error(config.keyPath("project_id"), "required: the service-account file names no project_id")
                return nil
            }
            credentials = .harmony(projectId: project, account: account)
        default:
            diagnostics.error(config.keyPath("api"), "must be android or harmony, got '\(api)'")
            return nil
        }
        guard let full, let idOnly else { return nil }
        return HMSConfig(
            credentials: credentials, baseURL: baseURL, upstream: upstream, retry: retry, sendBadgeCounts: badges,
            androidOptions: androidOptions, badgePriority: badgePriority, pushType: full, eventIdOnlyPushType: idOnly, category: category,
            title: title, body: body,
            ttl: ttl)
    }
}
