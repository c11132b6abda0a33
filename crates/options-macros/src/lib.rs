//! `#[options]`: the one declaration of a configuration struct's keys (see `hostsim-options`).
//!
//! On a struct, for each field with `#[option(...)]`:
//! - `default = EXPR`: the key is optional and this is its default (serde's, through a generated
//!   function, and `Default`'s when every field has one); without it the key is required;
//! - `bound = RANGE, why = TEXT`: the values a number may take, or an array's longest length,
//!   and why the range ends there; `each = RANGE, each_why = TEXT` for each element of an array;
//! - `gen = EXPR`: how a fuzzer generates a value, where the type does not say (`Gen::Cpus`);
//! - `skip`: not a key (a flattened map of other declarations' keys).
//!
//! Generated: the serde defaults, `Default` (when every field has a default), and
//! `hostsim_options::Options` (`keys()`: name as serde spells it, the field's doc comment, type,
//! bound, default, generator) and `OptionType` (the struct is a table). On an enum:
//! `OptionType` listing its values as serde spells them (`rename_all = "snake_case"`, `rename`)
//! with their doc comments.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Fields, Item, Lit, Meta, Token};

#[proc_macro_attribute]
pub fn options(_args: TokenStream, input: TokenStream) -> TokenStream {
    let item = syn::parse_macro_input!(input as Item);
    let out = match item {
        Item::Struct(s) => on_struct(s),
        Item::Enum(e) => on_enum(e),
        other => Err(syn::Error::new_spanned(other, "#[options] goes on a struct or an enum")),
    };
    out.unwrap_or_else(|e| e.to_compile_error()).into()
}

/// The text of the doc comments among `attrs`, lines joined.
fn doc(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for a in attrs {
        if let Meta::NameValue(nv) = &a.meta {
            if nv.path.is_ident("doc") {
                if let Expr::Lit(syn::ExprLit { lit: Lit::Str(s), .. }) = &nv.value {
                    lines.push(s.value().trim().to_string());
                }
            }
        }
    }
    lines.join(" ").trim().to_string()
}

/// A `serde(...)` attribute's `name = "value"` (e.g. `rename`), if any of `attrs` has one.
fn serde_str(attrs: &[Attribute], name: &str) -> Option<String> {
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let Ok(list) = a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) else { continue };
        for m in list {
            if let Meta::NameValue(nv) = m {
                if nv.path.is_ident(name) {
                    if let Expr::Lit(syn::ExprLit { lit: Lit::Str(s), .. }) = &nv.value {
                        return Some(s.value());
                    }
                }
            }
        }
    }
    None
}

/// What `#[option(...)]` says of a field.
#[derive(Default)]
struct Opt {
    default: Option<Expr>,
    bound: Option<Expr>,
    why: Option<Expr>,
    each: Option<Expr>,
    each_why: Option<Expr>,
    gen: Option<Expr>,
    skip: bool,
}

fn parse_opt(attrs: &mut Vec<Attribute>) -> syn::Result<Opt> {
    let mut o = Opt::default();
    let mut keep = Vec::new();
    for a in attrs.drain(..) {
        if !a.path().is_ident("option") {
            keep.push(a);
            continue;
        }
        let list = a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)?;
        for m in list {
            match m {
                Meta::Path(p) if p.is_ident("skip") => o.skip = true,
                Meta::NameValue(nv) => {
                    let slot = match nv.path.get_ident().map(|i| i.to_string()).as_deref() {
                        Some("default") => &mut o.default,
                        Some("bound") => &mut o.bound,
                        Some("why") => &mut o.why,
                        Some("each") => &mut o.each,
                        Some("each_why") => &mut o.each_why,
                        Some("gen") => &mut o.gen,
                        _ => return Err(syn::Error::new_spanned(nv.path, "unknown #[option] key")),
                    };
                    *slot = Some(nv.value);
                }
                other => return Err(syn::Error::new_spanned(other, "expected `key = value` or `skip`")),
            }
        }
    }
    *attrs = keep;
    Ok(o)
}

fn pair(range: &Option<Expr>, why: &Option<Expr>) -> Tokens {
    match range {
        Some(r) => {
            let w = why.as_ref().map_or_else(|| quote!(""), |w| quote!(#w));
            quote!(Some((#r, #w)))
        }
        None => quote!(None),
    }
}

fn on_struct(mut s: syn::ItemStruct) -> syn::Result<Tokens> {
    let name = s.ident.clone();
    let name_str = name.to_string();
    let Fields::Named(fields) = &mut s.fields else {
        return Err(syn::Error::new_spanned(&s, "#[options] needs named fields"));
    };
    let mut defaults = Vec::new();
    let mut keys = Vec::new();
    let mut all_default = true;
    let mut inits = Vec::new();
    for f in fields.named.iter_mut() {
        let o = parse_opt(&mut f.attrs)?;
        let ident = f.ident.clone().expect("named field");
        let ty = f.ty.clone();
        if o.skip {
            inits.push(quote!(#ident: ::core::default::Default::default()));
            continue;
        }
        let key = serde_str(&f.attrs, "rename").unwrap_or_else(|| ident.to_string());
        let text = doc(&f.attrs);
        let fn_name = format_ident!("__default_{}", ident);
        let default = match &o.default {
            Some(d) => {
                let path = format!("{name_str}::{fn_name}");
                f.attrs.push(syn::parse_quote!(#[serde(default = #path)]));
                defaults.push(quote! {
                    #[doc(hidden)]
                    pub fn #fn_name() -> #ty {
                        #d
                    }
                });
                inits.push(quote!(#ident: Self::#fn_name()));
                quote!(Some(|| ::hostsim_options::render(&#name::#fn_name())))
            }
            None => {
                all_default = false;
                quote!(None)
            }
        };
        let range = pair(&o.bound, &o.why);
        let each = pair(&o.each, &o.each_why);
        let gen = match &o.gen {
            Some(g) => quote!(|| #g),
            None => quote!(<#ty as ::hostsim_options::OptionType>::gen),
        };
        let ty_str = quote!(#ty).to_string().replace(' ', "");
        keys.push(quote! {
            ::hostsim_options::Key {
                name: #key,
                doc: #text,
                ty: #ty_str,
                range: #range,
                each: #each,
                default: #default,
                gen: #gen,
            }
        });
    }
    let default_impl = if all_default {
        quote! {
            impl ::core::default::Default for #name {
                fn default() -> Self {
                    #name { #(#inits),* }
                }
            }
        }
    } else {
        quote!()
    };
    Ok(quote! {
        #s

        impl #name {
            #(#defaults)*
        }

        #default_impl

        impl ::hostsim_options::Options for #name {
            fn keys() -> &'static [::hostsim_options::Key] {
                static KEYS: &[::hostsim_options::Key] = &[#(#keys),*];
                KEYS
            }
        }

        impl ::hostsim_options::OptionType for #name {
            fn gen() -> ::hostsim_options::Gen {
                ::hostsim_options::Gen::Table(<#name as ::hostsim_options::Options>::keys)
            }
        }
    })
}

/// `FlowLimit` → `flow_limit` (serde's `snake_case`).
fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn on_enum(e: syn::ItemEnum) -> syn::Result<Tokens> {
    let name = e.ident.clone();
    let snake_case = serde_str(&e.attrs, "rename_all").is_some_and(|r| r == "snake_case");
    let mut values = Vec::new();
    for v in &e.variants {
        let value = serde_str(&v.attrs, "rename").unwrap_or_else(|| {
            let n = v.ident.to_string();
            if snake_case {
                snake(&n)
            } else {
                n
            }
        });
        let text = doc(&v.attrs);
        values.push(quote!((#value, #text)));
    }
    Ok(quote! {
        #e

        impl ::hostsim_options::OptionType for #name {
            fn gen() -> ::hostsim_options::Gen {
                ::hostsim_options::Gen::Choice(&[#(#values),*])
            }
        }
    })
}
