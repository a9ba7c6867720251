import HeraldCore
import OTel
import ServiceLifecycle
import Tracing

/// OpenTelemetry tracing (`tracing:`, docs/operations.md "Tracing"): when enabled, spans for each
/// HTTP request, each device dispatch and each upstream call (AsyncHTTPClient adds its own) are
/// exported over OTLP/HTTP. Off by default; when off, the request paths make no spans at all
/// (`Spans.enabled`).
enum TracingSetup {
    /// Bootstraps the process-wide tracer and returns the exporter's service (to run first in the
    /// service group, so that it stops last and flushes). Call before any pushkin is made: HTTP
    /// clients take the tracer when they are created.
    static func bootstrap(_ config: GatewayConfig.Tracing) throws -> (any Service)? {
        guard config.enabled else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = config.serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.endpoint = config.endpoint
        configuration.traces.otlpExporter.protocol = config.json ? .httpJSON : .httpProtobuf
        configuration.traces.batchSpanProcessor.scheduleDelay = config.exportInterval
        if let sampler = OTel.Configuration.TracesConfiguration.SamplerConfiguration.traceIDRatio(ratio: config.sampleRatio) {
            configuration.traces.sampler = sampler
        }
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        Spans.enable()
        return service
    }
}
