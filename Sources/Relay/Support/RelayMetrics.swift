import CLISupport
public import ConnectionGuard
import Foundation
public import Prometheus

#if canImport(Glibc)
import Glibc
#endif

/// The relay's metrics, in one Prometheus registry per relay (tests run several relays in one process).
///
/// No metric carries a user, device, token or sender label: only states, statuses and scopes.
public final class RelayMetrics: Sendable {
    /// The registry `GET /metrics` renders.
    public let registry: PrometheusCollectorRegistry

    let queueQueued: Gauge
    let queueLeased: Gauge
    let pushesAccepted: Counter
    let duplicateSubmits: Counter
    let duplicateDeliveries: Counter
    let retries: Counter
    let enqueueToDelivered: DurationHistogram

    /// The server's connections, counted at each scrape (set by the application that owns them).
    let connections: ConnectionTracker?
    private let startTime = Date()

    /// - Parameters:
    ///   - registry: Where the metrics live.
    ///   - connections: The server's connections, if this relay serves (open connections and why the server closed
    ///     others are exported from it).
    public init(
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
        connections: ConnectionTracker? = nil
    ) {
        self.registry = registry
        self.connections = connections
        registry.makeGauge(
            descriptor: Self.name("build_info", unit: "", "The release that runs (always 1)"),
            labels: [("version", ToolVersion.current)]
        ).set(to: 1)
        let depth = Self.name("queue_depth", unit: "", "Pushes in the queue by state")
        self.queueQueued = registry.makeGauge(descriptor: depth, labels: [("state", "queued")])
        self.queueLeased = registry.makeGauge(descriptor: depth, labels: [("state", "leased")])
        self.pushesAccepted = registry.makeCounter(
            descriptor: Self.name("pushes_accepted", unit: "total", "Pushes committed to the queue (202)")
        )
        self.duplicateSubmits = registry.makeCounter(
            descriptor: Self.name("duplicate_submits", unit: "total", "Submits answered from an idempotency key")
        )
        self.duplicateDeliveries = registry.makeCounter(
            descriptor: Self.name(
                "duplicate_deliveries",
                unit: "total",
                "Pushes sent again after another lease had completed them (at-least-once)"
            )
        )
        self.retries = registry.makeCounter(
            descriptor: Self.name("delivery_retries", unit: "total", "Deliveries rescheduled after 429/5xx/timeouts")
        )
        self.enqueueToDelivered = registry.makeDurationHistogram(
            descriptor: Self.name("enqueue_to_delivered", unit: "seconds", "From the 202 to APNs' 200"),
            buckets: [
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
                .seconds(30), .seconds(60), .seconds(300),
            ]
        )
    }

    static func name(_ metric: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "relay", metricName: metric, unitName: unit, helpText: help)
    }

    func submit(_ outcome: String) {
        self.registry.makeCounter(
            descriptor: Self.name("submits", unit: "total", "Submits by outcome"),
            labels: [("outcome", outcome)]
        ).increment()
    }

    func rateLimited(scope: String) {
        self.registry.makeCounter(
            descriptor: Self.name("rate_limited_submits", unit: "total", "Submits refused with 429"),
            labels: [("scope", scope)]
        ).increment()
    }

    /// `status` is APNs' HTTP status, or `local-<outcome>` when APNs gave none.
    func delivery(status: String) {
        self.registry.makeCounter(
            descriptor: Self.name("deliveries", unit: "total", "Delivery attempts by APNs status"),
            labels: [("status", status)]
        ).increment()
    }

    func setQueue(queued: Int, leased: Int) {
        self.queueQueued.set(to: Double(queued))
        self.queueLeased.set(to: Double(leased))
    }

    /// The Prometheus text exposition, with the process and connection figures of now.
    public func render() -> [UInt8] {
        self.collectProcess()
        if let connections = self.connections {
            self.registry.makeGauge(
                descriptor: Self.name("connections_open", unit: "", "Client connections open now")
            ).set(to: Double(connections.openConnections))
            self.registry.makeGauge(
                descriptor: Self.name("connections_accepted", unit: "total", "Client connections accepted")
            ).set(to: Double(connections.acceptedConnections))
            let closed = connections.closedConnections
            for reason in ConnectionTracker.CloseReason.allCases {
                self.registry.makeGauge(
                    descriptor: Self.name(
                        "connections_closed",
                        unit: "total",
                        "Connections the relay closed, by reason"
                    ),
                    labels: [("reason", reason.rawValue)]
                ).set(to: Double(closed[reason] ?? 0))
            }
        }
        return self.registry.emitToBuffer()
    }

    /// The standard process metrics (as Prometheus' client libraries name them), from /proc.
    private func collectProcess() {
        func gauge(_ name: String, _ help: String, _ value: Double) {
            self.registry.makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help))
                .set(to: value)
        }
        gauge(
            "process_start_time_seconds",
            "Start time of the process since 1970",
            self.startTime.timeIntervalSince1970
        )
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            gauge("process_max_fds", "The file descriptor limit", Double(min(limit.rlim_cur, 1 << 40)))
        }
        if let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            gauge("process_open_fds", "Open file descriptors", Double(fds.count))
        }
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        {
            // After the command: field 3 is the state; utime and stime are fields 14 and 15, rss field 24.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            if fields.count > 21, let user = Double(fields[11]), let system = Double(fields[12]),
                let pages = Double(fields[21])
            {
                gauge(
                    "process_cpu_seconds_total",
                    "User and system CPU time spent, in seconds",
                    (user + system) / ticks
                )
                gauge(
                    "process_resident_memory_bytes",
                    "Resident memory size in bytes",
                    pages * Double(sysconf(Int32(_SC_PAGESIZE)))
                )
            }
        }
    }
}
