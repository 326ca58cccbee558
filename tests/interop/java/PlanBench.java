// PlanBench times scan planning of one Floe table with the Apache Iceberg
// Java client, planned on the client (scan-planning-mode=client: the
// client reads the manifest list and manifests through Floe's S3 endpoint
// with the credentials vended with the table) and on the server
// (scan-planning-mode=server: RESTTableScan, Floe's planTableScan and
// fetchScanTasks), in one JVM, taking turns, and prints the medians. It is
// a benchmark (bench/plan_java.sh), not a test.
//
//   java -cp "$(cat CP)":CLASSES PlanBench SPEC.json
//
// SPEC.json: {"catalog": {REST catalog properties}, "table": "ns.name",
// "manifests": 100, "files-per-manifest": 100, "iterations": 30,
// "warmup": 5, "token-url": ..., "client-id": ..., "client-secret": ...,
// "uri": the catalog URL, "prefix": the warehouse}.
//
// Setup (when the table does not exist): an identity-partitioned table
// (region, 10 values), then `manifests` fast appends of
// `files-per-manifest` data files each, metadata only (planning reads no
// data file), so the table has manifests x files data files in
// `manifests` manifests.
//
// Each iteration plans, in turn (the order alternating), with a new filter
// every file passes (region != 'x<i>': no plan cache hit, manifests
// already read once):
//   client: TableScan.planFiles() of a BaseTable (client-side planning);
//   server: the same through RESTTable (server-side planning);
//   raw:    the same plan as plain HTTP (POST .../plan, then POST .../tasks
//           for every plan task), the server's time without the Java
//           client's parsing of 10,000 tasks.
// and, with one fixed filter, server-cached (Floe's plan cache answers).
// Every plan must list every data file. It prints one JSON line per case
// with the median (p50) and p90 in milliseconds, and the ratio
// server / client of each iteration's pair (median).

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;

public class PlanBench {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int REGIONS = 10;

  public static void main(String[] args) throws Exception {
    JsonNode spec = JSON.readTree(new File(args[0]));
    Map<String, String> props = new HashMap<>();
    spec.get("catalog").properties().forEach(e -> props.put(e.getKey(), e.getValue().asText()));
    TableIdentifier id = TableIdentifier.parse(spec.get("table").asText());
    int manifests = spec.path("manifests").asInt(100);
    int perManifest = spec.path("files-per-manifest").asInt(100);
    int iterations = spec.path("iterations").asInt(30);
    int warmup = spec.path("warmup").asInt(5);
    long want = (long) manifests * perManifest;

    try (RESTCatalog cat = catalog("setup", props, "client")) {
      if (!cat.tableExists(id)) {
        long t0 = System.nanoTime();
        setup(cat, id, manifests, perManifest);
        System.err.printf("setup: %d files in %d manifests, %.1f s%n", want, manifests, (System.nanoTime() - t0) / 1e9);
      }
    }
    RESTCatalog clientCat = catalog("client", props, "client");
    RESTCatalog serverCat = catalog("server", props, "server");
    Table clientTable = clientCat.loadTable(id);
    Table serverTable = serverCat.loadTable(id);
    String tableClass = serverTable.getClass().getSimpleName();
    if (!tableClass.equals("RESTTable")) {
      throw new IllegalStateException("server planning is off: loadTable gave " + tableClass);
    }
    Raw raw = new Raw(spec, id);

    List<Double> client = new ArrayList<>();
    List<Double> server = new ArrayList<>();
    List<Double> rawMs = new ArrayList<>();
    List<Double> cached = new ArrayList<>();
    List<Double> ratio = new ArrayList<>();
    Expression fixed = Expressions.notEqual("region", "fixed");
    for (int i = -warmup; i < iterations; i++) {
      Expression filter = Expressions.notEqual("region", "x" + i);
      String rawFilter = "{\"type\":\"not-eq\",\"term\":\"region\",\"value\":\"y" + i + "\"}";
      double c;
      double s;
      if ((i & 1) == 0) {
        c = plan(clientTable, filter, want);
        s = plan(serverTable, filter, want);
      } else {
        s = plan(serverTable, filter, want);
        c = plan(clientTable, filter, want);
      }
      double r = raw.plan(rawFilter, want);
      double h = plan(serverTable, fixed, want);
      if (i >= 0) {
        client.add(c);
        server.add(s);
        rawMs.add(r);
        cached.add(h);
        ratio.add(s / c);
      }
    }
    print("client", "Java client plans (scan-planning-mode=client): manifests read through Floe's S3 endpoint", client, null);
    print("server", "Java client plans on the server (scan-planning-mode=server): planTableScan + fetchScanTasks", server, ratio);
    print("server-raw", "the same server plan as plain HTTP (no Java client parsing)", rawMs, null);
    print("server-cached", "server plan of a repeated scan (Floe's plan cache)", cached, null);
    System.out.flush();
    System.exit(0); // the SDKs' idle threads would keep the JVM up
  }

  static RESTCatalog catalog(String name, Map<String, String> base, String mode) {
    Map<String, String> p = new HashMap<>(base);
    p.put("scan-planning-mode", mode);
    RESTCatalog cat = new RESTCatalog();
    cat.setConf(new Configuration());
    cat.initialize(name, p);
    return cat;
  }

  static void setup(RESTCatalog cat, TableIdentifier id, int manifests, int perManifest) {
    if (!cat.namespaceExists(id.namespace())) {
      cat.createNamespace(id.namespace());
    }
    Schema schema = new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, "region", Types.StringType.get()));
    PartitionSpec spec = PartitionSpec.builderFor(schema).identity("region").build();
    Table table = cat.createTable(id, schema, spec, Map.of("format-version", "2"));
    for (int m = 0; m < manifests; m++) {
      AppendFiles append = table.newFastAppend();
      for (int f = 0; f < perManifest; f++) {
        String region = "r" + (f % REGIONS);
        append.appendFile(DataFiles.builder(spec)
            .withPath(table.location() + "/data/region=" + region + "/m" + m + "-f" + f + ".parquet")
            .withFormat(FileFormat.PARQUET)
            .withPartitionPath("region=" + region)
            .withFileSizeInBytes(4096)
            .withRecordCount(100)
            .build());
      }
      append.commit();
    }
  }

  // plan plans a scan of table with filter and returns the time in ms.
  static double plan(Table table, Expression filter, long want) throws Exception {
    long t0 = System.nanoTime();
    long n = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(filter).planFiles()) {
      for (FileScanTask t : tasks) {
        n++;
      }
    }
    double ms = (System.nanoTime() - t0) / 1e6;
    if (n != want) {
      throw new IllegalStateException(table.getClass().getSimpleName() + " planned " + n + " files, want " + want);
    }
    return ms;
  }

  static void print(String name, String what, List<Double> ms, List<Double> ratio) throws Exception {
    ObjectNode out = JSON.createObjectNode();
    out.put("case", name);
    out.put("what", what);
    out.put("n", ms.size());
    out.put("p50_ms", Math.round(pct(ms, 50) * 10) / 10.0);
    out.put("p90_ms", Math.round(pct(ms, 90) * 10) / 10.0);
    if (ratio != null) {
      out.put("server_over_client_p50", Math.round(pct(ratio, 50) * 100) / 100.0);
    }
    System.out.println(JSON.writeValueAsString(out));
  }

  static double pct(List<Double> xs, int p) {
    List<Double> s = new ArrayList<>(xs);
    Collections.sort(s);
    return s.get(Math.min(s.size() - 1, (int) Math.floor(p / 100.0 * s.size())));
  }

  // Raw plans over plain HTTP with the bootstrap credential's token.
  static final class Raw {
    final HttpClient http = HttpClient.newHttpClient();
    final String base;
    final String token;

    Raw(JsonNode spec, TableIdentifier id) throws Exception {
      String ns = String.join("\u001f", id.namespace().levels());
      base = spec.get("uri").asText() + "/v1/" + spec.get("prefix").asText() + "/namespaces/"
          + URLEncoder.encode(ns, StandardCharsets.UTF_8).replace("+", "%20") + "/tables/" + id.name();
      String form = "grant_type=client_credentials&scope=catalog&client_id="
          + URLEncoder.encode(spec.get("client-id").asText(), StandardCharsets.UTF_8)
          + "&client_secret=" + URLEncoder.encode(spec.get("client-secret").asText(), StandardCharsets.UTF_8);
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(spec.get("token-url").asText()))
          .header("Content-Type", "application/x-www-form-urlencoded")
          .POST(HttpRequest.BodyPublishers.ofString(form)).build(), HttpResponse.BodyHandlers.ofString());
      token = JSON.readTree(r.body()).get("access_token").asText();
    }

    JsonNode post(String path, String body) throws Exception {
      HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(URI.create(base + path))
          .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofByteArray());
      if (r.statusCode() != 200) {
        throw new IllegalStateException("POST " + path + ": " + r.statusCode() + " " + new String(r.body(), StandardCharsets.UTF_8));
      }
      return JSON.readTree(r.body());
    }

    double plan(String filter, long want) throws Exception {
      long t0 = System.nanoTime();
      JsonNode res = post("/plan", "{\"filter\":" + filter + "}");
      if (!res.path("status").asText().equals("completed")) {
        throw new IllegalStateException("plan status " + res.path("status").asText());
      }
      long n = res.path("file-scan-tasks").size();
      List<String> pending = new ArrayList<>();
      res.path("plan-tasks").forEach(t -> pending.add(t.asText()));
      while (!pending.isEmpty()) {
        String task = pending.remove(pending.size() - 1);
        JsonNode page = post("/tasks", JSON.writeValueAsString(Map.of("plan-task", task)));
        n += page.path("file-scan-tasks").size();
        page.path("plan-tasks").forEach(t -> pending.add(t.asText()));
      }
      double ms = (System.nanoTime() - t0) / 1e6;
      if (n != want) {
        throw new IllegalStateException("raw plan listed " + n + " files, want " + want);
      }
      return ms;
    }
  }
}
