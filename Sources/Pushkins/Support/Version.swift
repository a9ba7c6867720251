/// Herald's version, sent upstream as `User-Agent: Herald/<version>`.
public enum HeraldVersion {
    public static let string = "0.2.0"
    public static let userAgent = "Herald/\(string)"
}
