// JdbcCheck exercises Floe's SQL endpoint with the PostgreSQL JDBC driver.
// test_jdbc.py runs it as a single-file program:
//
//	java -cp postgresql.jar JdbcCheck.java URL USER TOKEN TABLE ID
//
// and parses what it prints, one "key=value" line per check:
//
//	count=N           SELECT count(*) FROM TABLE (simple statement)
//	row=ID,NAME       a PreparedStatement with a bigint parameter, run twice
//	                  (the driver switches to a named server-side statement)
//	tables=A,B        DatabaseMetaData.getTables for TABLE's schema
//	columns=A:T,...   DatabaseMetaData.getColumns for TABLE
//	cancel=SQLSTATE   Statement.cancel() of a long query from another thread
//	error=SQLSTATE    a query on a missing table
import java.sql.*;
import java.util.*;
import java.util.concurrent.*;

public class JdbcCheck {
    public static void main(String[] args) throws Exception {
        String url = args[0], user = args[1], token = args[2], table = args[3];
        long id = Long.parseLong(args[4]);
        String schema = table.substring(0, table.lastIndexOf('.'));
        String name = table.substring(table.lastIndexOf('.') + 1);
        Properties props = new Properties();
        props.setProperty("user", user);
        props.setProperty("password", token);
        props.setProperty("prepareThreshold", "1");
        try (Connection c = DriverManager.getConnection(url, props)) {
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM " + table)) {
                rs.next();
                System.out.println("count=" + rs.getLong(1));
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT id, name FROM " + table + " WHERE id = ?")) {
                for (int i = 0; i < 2; i++) {
                    ps.setLong(1, id);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            System.out.println("row=" + rs.getLong(1) + "," + rs.getString(2));
                        }
                    }
                }
            }
            DatabaseMetaData md = c.getMetaData();
            List<String> tables = new ArrayList<>();
            try (ResultSet rs = md.getTables(null, schema, "%", null)) {
                while (rs.next()) {
                    tables.add(rs.getString("TABLE_NAME"));
                }
            }
            Collections.sort(tables);
            System.out.println("tables=" + String.join(",", tables));
            List<String> cols = new ArrayList<>();
            try (ResultSet rs = md.getColumns(null, schema, name, "%")) {
                while (rs.next()) {
                    cols.add(rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME"));
                }
            }
            System.out.println("columns=" + String.join(",", cols));
            try (Statement st = c.createStatement()) {
                ScheduledExecutorService ex = Executors.newSingleThreadScheduledExecutor();
                ex.schedule(() -> {
                    try {
                        st.cancel();
                    } catch (SQLException e) {
                        System.out.println("cancel-failed=" + e.getMessage());
                    }
                }, 1, TimeUnit.SECONDS);
                try (ResultSet rs = st.executeQuery("SELECT count(*) FROM " + table + " a, " + table + " b, " + table + " c, " + table + " d WHERE a.name || b.name || c.name || d.name LIKE '%never%'")) {
                    rs.next();
                    System.out.println("cancel=none:" + rs.getLong(1));
                } catch (SQLException e) {
                    System.out.println("cancel=" + e.getSQLState());
                } finally {
                    ex.shutdownNow();
                }
            }
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM " + schema + ".no_such_table")) {
                System.out.println("error=none");
            } catch (SQLException e) {
                System.out.println("error=" + e.getSQLState());
            }
            // The connection still works after the cancel and the error.
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT 1")) {
                rs.next();
                System.out.println("after=" + rs.getInt(1));
            }
        }
    }
}
