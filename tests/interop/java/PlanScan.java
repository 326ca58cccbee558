// PlanScan reads Floe tables with the Apache Iceberg Java client twice per
// case, once planned on the server (catalog property
// scan-planning-mode=server: RESTTable, RESTTableScan, Floe's planTableScan
// and fetchScanTasks) and once planned on the client (the same catalog with
// scan-planning-mode=client: BaseTable, manifests read by the client), and
// prints what each read, for test_java_plan.py to compare.
//
// Run as a single-file program with the class path that
// scripts/resolve-plan-java.sh resolves (Java 17+):
//
//   java -cp "$(cat CP)" tests/interop/java/PlanScan.java SPEC.json
//
// SPEC.json: {"catalog": {REST catalog properties: uri, warehouse,
// credential, oauth2-server-uri ...}, "setup": [ops], "cases": [cases]}.
//
// A setup op writes delete files with the Java client (PyIceberg cannot):
//   {"op": "equality-delete", "table": "ns.t", "column": "id", "values": [1, 2]}
//   {"op": "position-delete", "table": "ns.t", "positions": [0, 3]}
// (the positions in the oldest data file, by data sequence number). Each prints
// {"setup": op, "snapshot-id": n, "deletes": file count}.
//
// A case: {"name", "table", and optionally "filter" (the REST spec's
// expression JSON), "select" (column names), "snapshot-id", "ref",
// "incremental": {"from": n, "to": n} (appends after from up to to)}.
// Each case is read by a fresh catalog per mode sending the header
// X-Floe-Plan-Case: <name>/server or <name>/client, so that a recording
// proxy can tell the cases' exchanges apart. It prints one JSON line:
//   {"name", "server": SIDE, "client": SIDE}
// SIDE: {"table-class", "scan-class", "files", "delete-files", "paths": the
// data files' locations, sorted, "rows": the rows as sorted JSON objects},
// or {"error"} when planning or reading failed (the stack trace goes to
// stderr). The classes say where the scan was planned: RESTTable and
// RESTTableScan plan on the server. An incremental case uses
// TableScan.appendsBetween with scan-planning-mode=server, the one
// incremental API that starts from RESTTable.newScan(); in 1.11.0 it
// returns a client-side IncrementalDataTableScan (RESTTableScan would send
// start-snapshot-id and end-snapshot-id, but nothing creates one with them),
// and newIncrementalAppendScan with client planning. Rows are read with the generic
// readers through the scan's own FileIO (Scan.fileIO(): for a server plan,
// the storage credentials of the plan response), applying delete files and
// residual filters as iceberg-data's GenericReader does.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.IncrementalAppendScan;
import org.apache.iceberg.Scan;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.DeleteFilter;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IdentityPartitionConverters;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.EqualityDeleteWriter;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.deletes.PositionDeleteWriter;
import org.apache.iceberg.encryption.EncryptedFiles;
import org.apache.iceberg.encryption.EncryptedOutputFile;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.ExpressionParser;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.formats.FormatModelRegistry;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.PartitionUtil;

public class PlanScan {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: PlanScan SPEC.json");
      System.exit(2);
    }
    JsonNode spec = JSON.readTree(new File(args[0]));
    Map<String, String> props = new HashMap<>();
    spec.get("catalog").properties().forEach(e -> props.put(e.getKey(), e.getValue().asText()));

    if (spec.has("setup")) {
      try (RESTCatalog cat = catalog("setup", props, "client", "setup")) {
        for (JsonNode op : spec.get("setup")) {
          System.out.println(JSON.writeValueAsString(setup(cat, op)));
        }
      }
    }
    for (JsonNode c : spec.path("cases")) {
      String name = c.get("name").asText();
      ObjectNode out = JSON.createObjectNode();
      out.put("name", name);
      for (String mode : new String[] {"server", "client"}) {
        try (RESTCatalog cat = catalog(mode, props, mode, name)) {
          out.set(mode, read(cat, c, mode.equals("server")));
        } catch (Exception e) {
          System.err.println("case " + name + ", " + mode + " planning:");
          e.printStackTrace();
          out.putObject(mode).put("error", e.toString());
        }
      }
      System.out.println(JSON.writeValueAsString(out));
    }
    System.out.flush();
    // Exit now rather than wait for the SDKs' idle non-daemon threads.
    System.exit(0);
  }

  static RESTCatalog catalog(String name, Map<String, String> base, String mode, String caseName) {
    Map<String, String> p = new HashMap<>(base);
    p.put("scan-planning-mode", mode);
    p.put("header.X-Floe-Plan-Case", caseName + "/" + mode);
    RESTCatalog cat = new RESTCatalog();
    cat.setConf(new Configuration());
    cat.initialize(name, p);
    return cat;
  }

  // read plans and reads one case with cat; server says which planning it must be.
  static ObjectNode read(RESTCatalog cat, JsonNode c, boolean server) throws Exception {
    Table table = cat.loadTable(TableIdentifier.parse(c.get("table").asText()));
    Scan<?, FileScanTask, ?> scan;
    if (c.has("incremental")) {
      long from = c.get("incremental").get("from").asLong();
      long to = c.get("incremental").get("to").asLong();
      if (server) {
        @SuppressWarnings("deprecation")
        TableScan s = table.newScan().appendsBetween(from, to);
        scan = refine(s, c);
      } else {
        IncrementalAppendScan s = table.newIncrementalAppendScan().fromSnapshotExclusive(from).toSnapshot(to);
        scan = refine(s, c);
      }
    } else {
      TableScan s = table.newScan();
      if (c.has("snapshot-id")) {
        s = s.useSnapshot(c.get("snapshot-id").asLong());
      }
      if (c.has("ref")) {
        s = s.useRef(c.get("ref").asText());
      }
      scan = refine(s, c);
    }
    String scanClass = scan.getClass().getSimpleName();
    String tableClass = table.getClass().getSimpleName();

    List<FileScanTask> tasks = new ArrayList<>();
    try (CloseableIterable<FileScanTask> planned = scan.planFiles()) {
      planned.forEach(tasks::add);
    }
    FileIO io = scan.fileIO().get();
    Schema projection = scan.schema();
    List<String> rows = new ArrayList<>();
    List<String> paths = new ArrayList<>();
    int deletes = 0;
    for (FileScanTask task : tasks) {
      deletes += task.deletes().size();
      paths.add(task.file().location());
      try (CloseableIterable<Record> records = open(io, task, table.schema(), projection, scan.isCaseSensitive())) {
        for (Record r : records) {
          rows.add(render(r, projection));
        }
      }
    }
    Collections.sort(rows);
    ObjectNode out = JSON.createObjectNode();
    out.put("table-class", tableClass);
    out.put("scan-class", scanClass);
    out.put("files", tasks.size());
    out.put("delete-files", deletes);
    Collections.sort(paths);
    paths.forEach(out.putArray("paths")::add);
    ArrayNode arr = out.putArray("rows");
    for (String r : rows) {
      arr.add(JSON.readTree(r));
    }
    return out;
  }

  // refine applies a case's filter and select to scan.
  static <S extends Scan<S, FileScanTask, ?>> S refine(S scan, JsonNode c) {
    if (c.has("filter")) {
      scan = scan.filter(ExpressionParser.fromJson(c.get("filter").toString()));
    }
    if (c.has("select")) {
      List<String> cols = new ArrayList<>();
      c.get("select").forEach(n -> cols.add(n.asText()));
      scan = scan.select(cols);
    }
    return scan;
  }

  // open reads one file scan task as iceberg-data's GenericReader does, with io.
  static CloseableIterable<Record> open(FileIO io, FileScanTask task, Schema tableSchema, Schema projection, boolean cs) {
    DeleteFilter<Record> deletes = new GenericDeleteFilter(io, task, tableSchema, projection);
    Schema readSchema = deletes.requiredSchema();
    Map<Integer, ?> partition = PartitionUtil.constantsMap(task, IdentityPartitionConverters::convertConstant);
    CloseableIterable<Record> records =
        FormatModelRegistry.readBuilder(task.file().format(), Record.class, io.newInputFile(task.file()))
            .project(readSchema)
            .idToConstant(partition)
            .split(task.start(), task.length())
            .caseSensitive(cs)
            .filter(task.residual())
            .build();
    records = deletes.filter(records);
    Expression residual = task.residual();
    if (residual != null && residual != Expressions.alwaysTrue()) {
      InternalRecordWrapper wrapper = new InternalRecordWrapper(readSchema.asStruct());
      Evaluator eval = new Evaluator(readSchema.asStruct(), residual, cs);
      records = CloseableIterable.filter(records, r -> eval.eval(wrapper.wrap(r)));
    }
    return records;
  }

  static String render(Record r, Schema projection) throws Exception {
    ObjectNode o = JSON.createObjectNode();
    for (Types.NestedField f : projection.columns()) {
      Object v = r.getField(f.name());
      if (v == null) {
        o.putNull(f.name());
      } else if (v instanceof Long || v instanceof Integer) {
        o.put(f.name(), ((Number) v).longValue());
      } else if (v instanceof Double || v instanceof Float) {
        o.put(f.name(), ((Number) v).doubleValue());
      } else if (v instanceof Boolean) {
        o.put(f.name(), (Boolean) v);
      } else {
        o.put(f.name(), v.toString());
      }
    }
    return JSON.writeValueAsString(o);
  }

  static ObjectNode setup(RESTCatalog cat, JsonNode op) throws Exception {
    Table table = cat.loadTable(TableIdentifier.parse(op.get("table").asText()));
    String kind = op.get("op").asText();
    DeleteFile file;
    switch (kind) {
      case "equality-delete": {
        String column = op.get("column").asText();
        Schema deleteSchema = table.schema().select(column);
        int fieldId = table.schema().findField(column).fieldId();
        GenericFileWriterFactory factory =
            new GenericFileWriterFactory.Builder(table)
                .deleteFileFormat(FileFormat.PARQUET)
                .equalityFieldIds(new int[] {fieldId})
                .equalityDeleteRowSchema(deleteSchema)
                .build();
        EqualityDeleteWriter<Record> w = factory.newEqualityDeleteWriter(outputFile(table, "eq"), table.spec(), null);
        try (w) {
          for (JsonNode v : op.get("values")) {
            GenericRecord rec = GenericRecord.create(deleteSchema);
            rec.setField(column, v.isIntegralNumber() ? (Object) v.asLong() : v.asText());
            w.write(rec);
          }
        }
        file = w.toDeleteFile();
        break;
      }
      case "position-delete": {
        List<DataFile> files = new ArrayList<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
          tasks.forEach(t -> files.add(t.file()));
        }
        files.sort(Comparator.comparing(DataFile::dataSequenceNumber));
        DataFile target = files.get(0);
        GenericFileWriterFactory factory =
            new GenericFileWriterFactory.Builder(table).deleteFileFormat(FileFormat.PARQUET).build();
        PositionDeleteWriter<Record> w = factory.newPositionDeleteWriter(outputFile(table, "pos"), table.spec(), null);
        try (w) {
          PositionDelete<Record> pd = PositionDelete.create();
          for (JsonNode pos : op.get("positions")) {
            w.write(pd.set(target.location(), pos.asLong()));
          }
        }
        file = w.toDeleteFile();
        break;
      }
      default:
        throw new IllegalArgumentException("unknown setup op " + kind);
    }
    table.newRowDelta().addDeletes(file).commit();
    ObjectNode out = JSON.createObjectNode();
    out.put("setup", kind);
    out.put("table", op.get("table").asText());
    out.put("snapshot-id", table.currentSnapshot().snapshotId());
    out.put("delete-file", file.location());
    return out;
  }

  static EncryptedOutputFile outputFile(Table table, String prefix) {
    String name = prefix + "-deletes-" + UUID.randomUUID() + ".parquet";
    return EncryptedFiles.plainAsEncryptedOutput(table.io().newOutputFile(table.locationProvider().newDataLocation(name)));
  }
}
