// edge-redlock/otel with the real @opentelemetry/api types and SDK (in-memory exporters), on the real
// cluster: a span per acquisition with its attributes and status, the duration histogram, the contention
// counter; and the Hono middleware's Server-Timing header.
import type { metrics, trace } from "@opentelemetry/api";
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { redlock as guard } from "../../../src/hono/index.ts";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { otelEvents } from "../../../src/otel/index.ts";
import { useCluster } from "../fixture.ts";

const env = useCluster();
const configs = () => env.cluster.nodes.map(({ url, token }) => ({ url, token }));

describe("otelEvents (real @opentelemetry/api and SDK, real cluster)", () => {
  it("records a span per acquisition, the acquire duration and the contention", async () => {
    const spans = new InMemorySpanExporter();
    const tracing = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] });
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const metering = new MeterProvider({ readers: [reader] });
    // The adapter takes the API's own types: a Tracer and a Meter as @opentelemetry/api declares them.
    const tracer: ReturnType<typeof trace.getTracer> = tracing.getTracer("test");
    const meter: ReturnType<typeof metrics.getMeter> = metering.getMeter("test");
    const onEvent = otelEvents(tracer, meter, { resource: ([key]) => key.split(":")[0] });

    // Random retry (fair: false): exactly retryCount + 1 attempts. A fair waiter's informed waits may fit more
    // attempts into its retryCount × retryDelay budget (at least retryCount retries), and a fast machine did.
    const redlock = new Redlock(configs(), { onEvent, retryDelay: 20, retryJitter: 5, fair: false });
    const lock = await redlock.acquire(["otel:a"], 5_000);
    await expect(redlock.acquire(["otel:a"], 1_000, { retryCount: 2 })).rejects.toBeInstanceOf(LockAcquisitionError);
    await lock.release();

    const [held, failed] = spans.getFinishedSpans();
    expect(spans.getFinishedSpans()).toHaveLength(2);
    expect(held.name).toBe("edge-redlock.acquire");
    expect(held.status.code).toBe(1);
    expect(held.attributes).toMatchObject({
      "edge_redlock.kind": "lock",
      "edge_redlock.outcome": "held",
      "edge_redlock.resource": "otel",
      "edge_redlock.attempts": 1,
      "edge_redlock.resources.count": 1,
    });
    expect(held.attributes["edge_redlock.nodes.granted"]).toBeGreaterThanOrEqual(3);
    expect(failed.status).toMatchObject({ code: 2, message: "held" });
    expect(failed.attributes).toMatchObject({
      "edge_redlock.outcome": "failed",
      "edge_redlock.attempts": 3,
      "edge_redlock.reason": "held",
    });
    // The span covers the acquisition: it starts when acquire was called, before the two retry waits.
    const ms = (t: [number, number]) => t[0] * 1_000 + t[1] / 1e6;
    expect(ms(failed.endTime) - ms(failed.startTime)).toBeGreaterThanOrEqual(30);
    expect(JSON.stringify(spans.getFinishedSpans().map((s) => s.attributes))).not.toContain("otel:a");

    await metering.forceFlush();
    const exported = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const duration = exported.find((m) => m.descriptor.name === "edge_redlock.acquire.duration");
    const contention = exported.find((m) => m.descriptor.name === "edge_redlock.contention");
    expect(duration?.descriptor.unit).toBe("ms");
    expect(duration?.dataPoints.map((p) => (p.value as { count: number }).count).reduce((a, b) => a + b, 0)).toBe(2);
    // Two refused attempts that were retried, and the refused last one.
    expect(contention?.dataPoints.map((p) => p.value as number).reduce((a, b) => a + b, 0)).toBe(3);
    await Promise.all([tracing.shutdown(), metering.shutdown()]);
  });
});

describe("serverTiming on the Hono middleware (real cluster)", () => {
  it("adds Server-Timing with the acquire time and attempts, when asked, on a taken and a refused lock", async () => {
    const redlock = new Redlock(configs(), { retryDelay: 20, retryJitter: 5 });
    const app = new Hono()
      .post("/timed", guard("otel:route", { redlock, serverTiming: true, wait: 200 }), (c) => c.text("ok"))
      .post("/plain", guard("otel:plain", { redlock }), (c) => c.text("ok"));
    const taken = await app.request("/timed", { method: "POST" });
    expect(taken.status).toBe(200);
    expect(taken.headers.get("Server-Timing")).toMatch(/^lock;dur=\d+(\.\d)?;desc="1 attempt"$/);
    expect((await app.request("/plain", { method: "POST" })).headers.get("Server-Timing")).toBeNull();

    const holder = await redlock.acquire(["otel:route"], 5_000);
    const refused = await app.request("/timed", { method: "POST" });
    expect(refused.status).toBe(423);
    const timing = refused.headers.get("Server-Timing") ?? "";
    const [, dur, attempts] = /^lock;dur=([\d.]+);desc="(\d+) attempts?"$/.exec(timing) ?? [];
    expect(Number(attempts)).toBeGreaterThan(1);
    expect(Number(dur)).toBeGreaterThanOrEqual(150);
    await holder.release();
    expect(() => guard("otel:x", { serverTiming: "yes" as never })).toThrow("options.serverTiming must be a boolean");
  });
});
