fn main() {
    for (name, text) in hostsim_scenario::builtin_scenarios() {
        let p = std::path::Path::new("/nonexistent/x.toml");
        let t0 = std::time::Instant::now();
        let n = 20;
        let mut runs = 0;
        for _ in 0..n {
            let sc = hostsim_scenario::load_str(p, text, &[]).unwrap();
            runs = sc.run_count();
        }
        println!("{name:30} {runs:4} runs  {:8.2} ms/load", t0.elapsed().as_secs_f64() * 1e3 / n as f64);
    }
}
