import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * Reads pgJDBC's DatabaseMetaData from Floe's SQL endpoint and prints it as
 * one line of JSON (test_pg_tools.py checks it).
 *
 * <p>Usage: java -cp postgresql.jar PgJdbcMeta.java JDBC_URL USER SCHEMA_PATTERN, with
 * the password (an access token) in $FLOE_PGJDBC_PASSWORD.
 */
public class PgJdbcMeta {
    public static void main(String[] args) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        props.setProperty("password", System.getenv("FLOE_PGJDBC_PASSWORD"));
        String pattern = args[2];
        try (Connection c = DriverManager.getConnection(args[0], props)) {
            DatabaseMetaData md = c.getMetaData();
            StringBuilder out = new StringBuilder("{");
            field(out, "product", quote(md.getDatabaseProductName())).append(',');
            field(out, "major", String.valueOf(md.getDatabaseMajorVersion())).append(',');
            field(out, "user", quote(md.getUserName())).append(',');
            field(out, "catalog", quote(c.getCatalog())).append(',');
            field(out, "catalogs", rows(md.getCatalogs(), "TABLE_CAT")).append(',');
            field(out, "schemas", rows(md.getSchemas(null, pattern), "TABLE_CATALOG", "TABLE_SCHEM")).append(',');
            field(out, "tables", rows(md.getTables(null, pattern, "%", new String[] {"TABLE", "VIEW"}),
                    "TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE")).append(',');
            field(out, "columns", rows(md.getColumns(null, pattern, "%", "%"),
                    "TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME", "COLUMN_NAME", "TYPE_NAME", "DATA_TYPE")).append(',');
            field(out, "primary_keys", rows(md.getPrimaryKeys(null, null, "orders"), "COLUMN_NAME"));
            System.out.println(out.append('}'));
        }
    }

    static StringBuilder field(StringBuilder b, String name, String json) {
        return b.append(quote(name)).append(':').append(json);
    }

    static String rows(ResultSet rs, String... cols) throws SQLException {
        List<String> out = new ArrayList<>();
        try (rs) {
            while (rs.next()) {
                List<String> vals = new ArrayList<>();
                for (String col : cols) {
                    Object v = rs.getObject(col);
                    vals.add(v == null ? "null" : v instanceof Number ? v.toString() : quote(v.toString()));
                }
                out.add(cols.length == 1 ? vals.get(0) : "[" + String.join(",", vals) + "]");
            }
        }
        return "[" + String.join(",", out) + "]";
    }

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                default -> {
                    if (ch < 0x20) {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
