//! `#[derive(Wire)]` and `#[derive(KeyHash)]` for user structs and enums, so
//! that a user type can travel through exchanges and be kept, checkpointed
//! and redistributed as keyed state without a hand-written codec.
//!
//! Both derives are re-exported by `weir-runtime` next to the traits they
//! implement (`weir_runtime::{Wire, KeyHash}`), as serde does with its
//! derives. The generated code names the traits through
//! `::weir_runtime::__derive`; a crate that reaches them another way says so
//! with `#[weir(crate = "path")]` (weir's own crates do).
//!
//! # The formats (part of weir's checkpoint format)
//!
//! - **Wire, struct:** the fields in declaration order, each in its own
//!   format; nothing else. A struct whose fields all have a fixed length
//!   has a fixed length too (`Wire::FIXED_LEN`), so a struct of integers
//!   costs what the tuple of those integers costs.
//! - **Wire, enum:** one byte, the variant's index in declaration order
//!   (at most 256 variants), then that variant's fields as above.
//! - **KeyHash, struct:** the fields' key hashes folded left to right as
//!   weir's tuples are: one field hashes as that field (a newtype keeps its
//!   inner type's hash and key group), `h = fmix64(h ^ next.rotate_left(32))`
//!   for every further field, so a struct of two or three fields hashes like
//!   the tuple of them; a struct without fields hashes as `0u64`.
//! - **KeyHash, enum:** the variant's index as a `u32` key hash, folded with
//!   the variant's fields in the same way.
//!
//! Reordering, adding or removing fields or variants changes the format:
//! state written before cannot be read after (as with Flink's POJO
//! serializer without schema evolution).

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote};
use syn::{parse_macro_input, Data, DeriveInput, Fields, LitStr, Path};

/// Implements `Wire` (weir's record and state codec) for a struct or enum
/// whose fields all implement it. See the [crate] docs for the format.
#[proc_macro_derive(Wire, attributes(weir))]
pub fn derive_wire(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match wire(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Implements `KeyHash` (the stable hash that picks a key's key group) for
/// a struct or enum whose fields all implement it. See the [crate] docs
/// for the hash.
#[proc_macro_derive(KeyHash, attributes(weir))]
pub fn derive_key_hash(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match key_hash(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The path the generated code reaches the traits by: `#[weir(crate =
/// "...")]`'s, or `::weir_runtime`; `::__derive` is appended.
fn krate(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let mut path: Option<Path> = None;
    for attr in &input.attrs {
        if !attr.path().is_ident("weir") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let lit: LitStr = meta.value()?.parse()?;
                path = Some(lit.parse()?);
                Ok(())
            } else {
                Err(meta.error("unknown weir attribute; expected `crate = \"path\"`"))
            }
        })?;
    }
    Ok(match path {
        Some(p) => quote!(#p::__derive),
        None => quote!(::weir_runtime::__derive),
    })
}

/// Adds `bound` to every type parameter of the item.
fn generics_with(input: &DeriveInput, bound: TokenStream2) -> syn::Generics {
    let mut generics = input.generics.clone();
    for param in generics.type_params_mut() {
        param.bounds.push(syn::parse_quote!(#bound));
    }
    generics
}

/// The bindings of a variant's or struct's fields (`f0, f1, ...`) and the
/// pattern that binds them (`{ a: f0, .. }`, `(f0, f1)` or nothing).
fn bindings(fields: &Fields) -> (Vec<syn::Ident>, TokenStream2) {
    let names: Vec<syn::Ident> = (0..fields.len()).map(|i| format_ident!("f{i}")).collect();
    let pattern = match fields {
        Fields::Named(named) => {
            let idents = named.named.iter().map(|f| f.ident.as_ref().expect("named"));
            quote!({ #(#idents: #names),* })
        }
        Fields::Unnamed(_) => quote!((#(#names),*)),
        Fields::Unit => quote!(),
    };
    (names, pattern)
}

/// Code that reads `fields` from `input[at..]` into `f0, f1, ...` and then
/// evaluates to the value built by `construct`.
fn read_fields(c: &TokenStream2, fields: &Fields, construct: TokenStream2) -> TokenStream2 {
    let (names, _) = bindings(fields);
    let types = fields.iter().map(|f| &f.ty);
    quote! {
        #(
            let (#names, n) = <#types as #c::Wire>::read(&input[at..])?;
            at += n;
        )*
        #construct
    }
}

fn wire(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let c = krate(input)?;
    let name = &input.ident;
    let generics = generics_with(input, quote!(#c::Wire));
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let what = LitStr::new(&name.to_string(), Span::call_site());
    let body = match &input.data {
        Data::Struct(s) => {
            let (names, pattern) = bindings(&s.fields);
            let types: Vec<_> = s.fields.iter().map(|f| &f.ty).collect();
            let construct = quote!(#name #pattern);
            let read = read_fields(&c, &s.fields, quote!(Ok((#construct, at))));
            quote! {
                const FIXED_LEN: ::core::option::Option<usize> = {
                    let total = ::core::option::Option::Some(0usize);
                    #(
                        let total = match (total, <#types as #c::Wire>::FIXED_LEN) {
                            (::core::option::Option::Some(t), ::core::option::Option::Some(n)) => {
                                ::core::option::Option::Some(t + n)
                            }
                            _ => ::core::option::Option::None,
                        };
                    )*
                    total
                };
                #[inline]
                fn encoded_len(&self) -> usize {
                    if let ::core::option::Option::Some(n) = Self::FIXED_LEN {
                        return n;
                    }
                    let #name #pattern = self;
                    0 #(+ #c::Wire::encoded_len(#names))*
                }
                #[inline]
                fn write(&self, out: &mut [u8]) {
                    let #name #pattern = self;
                    let mut at = 0usize;
                    #(
                        let n = #c::Wire::encoded_len(#names);
                        #c::Wire::write(#names, &mut out[at..at + n]);
                        at += n;
                    )*
                    debug_assert_eq!(at, out.len());
                }
                #[inline]
                fn read(input: &[u8]) -> ::core::result::Result<(Self, usize), #c::DecodeError> {
                    if let ::core::option::Option::Some(n) = Self::FIXED_LEN {
                        if input.len() < n {
                            return Err(#c::DecodeError { what: #what, needed: n, available: input.len() });
                        }
                    }
                    let mut at = 0usize;
                    #read
                }
            }
        }
        Data::Enum(e) => {
            if e.variants.len() > 256 {
                return Err(syn::Error::new_spanned(
                    name,
                    "#[derive(Wire)] supports at most 256 variants (the tag is one byte)",
                ));
            }
            let mut len_arms = Vec::new();
            let mut write_arms = Vec::new();
            let mut read_arms = Vec::new();
            for (i, v) in e.variants.iter().enumerate() {
                let tag = i as u8;
                let vname = &v.ident;
                let (names, pattern) = bindings(&v.fields);
                len_arms
                    .push(quote!(#name::#vname #pattern => 1 #(+ #c::Wire::encoded_len(#names))*));
                write_arms.push(quote! {
                    #name::#vname #pattern => {
                        out[0] = #tag;
                        let mut at = 1usize;
                        #(
                            let n = #c::Wire::encoded_len(#names);
                            #c::Wire::write(#names, &mut out[at..at + n]);
                            at += n;
                        )*
                        debug_assert_eq!(at, out.len());
                    }
                });
                let construct = quote!(Ok((#name::#vname #pattern, at)));
                let read = read_fields(&c, &v.fields, construct);
                read_arms.push(quote!(#tag => { #read }));
            }
            let bad_tag = LitStr::new(&format!("{name} (unknown variant tag)"), Span::call_site());
            quote! {
                #[inline]
                fn encoded_len(&self) -> usize {
                    match self { #(#len_arms,)* }
                }
                #[inline]
                fn write(&self, out: &mut [u8]) {
                    match self { #(#write_arms)* }
                }
                #[inline]
                fn read(input: &[u8]) -> ::core::result::Result<(Self, usize), #c::DecodeError> {
                    let Some(&tag) = input.first() else {
                        return Err(#c::DecodeError { what: #what, needed: 1, available: 0 });
                    };
                    let mut at = 1usize;
                    match tag {
                        #(#read_arms)*
                        _ => Err(#c::DecodeError { what: #bad_tag, needed: 1, available: input.len() }),
                    }
                }
            }
        }
        Data::Union(_) => {
            return Err(syn::Error::new_spanned(
                name,
                "#[derive(Wire)] does not support unions",
            ))
        }
    };
    Ok(quote! {
        #[allow(unused_mut, unused_variables, unused_assignments, clippy::all)]
        impl #impl_generics #c::Wire for #name #ty_generics #where_clause {
            #body
        }
    })
}

/// Folds the key hashes of `names` onto `start` (or, with no start, onto
/// the first of them) as weir's tuples fold.
fn fold_hashes(
    c: &TokenStream2,
    start: Option<TokenStream2>,
    names: &[syn::Ident],
) -> TokenStream2 {
    let mut parts = names.iter().map(|n| quote!(#c::KeyHash::key_hash(#n)));
    let first = match start.or_else(|| parts.next()) {
        Some(first) => first,
        None => return quote!(#c::KeyHash::key_hash(&0u64)),
    };
    let rest: Vec<_> = parts.collect();
    quote! {{
        let h: u64 = #first;
        #( let h = #c::fmix64(h ^ (#rest).rotate_left(32)); )*
        h
    }}
}

fn key_hash(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let c = krate(input)?;
    let name = &input.ident;
    let generics = generics_with(input, quote!(#c::KeyHash));
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let body = match &input.data {
        Data::Struct(s) => {
            let (names, pattern) = bindings(&s.fields);
            let fold = fold_hashes(&c, None, &names);
            quote! {
                let #name #pattern = self;
                #fold
            }
        }
        Data::Enum(e) => {
            let arms = e.variants.iter().enumerate().map(|(i, v)| {
                let vname = &v.ident;
                let (names, pattern) = bindings(&v.fields);
                let tag = i as u32;
                let fold = fold_hashes(&c, Some(quote!(#c::KeyHash::key_hash(&#tag))), &names);
                quote!(#name::#vname #pattern => #fold)
            });
            quote!(match self { #(#arms,)* })
        }
        Data::Union(_) => {
            return Err(syn::Error::new_spanned(
                name,
                "#[derive(KeyHash)] does not support unions",
            ))
        }
    };
    Ok(quote! {
        #[allow(clippy::all)]
        impl #impl_generics #c::KeyHash for #name #ty_generics #where_clause {
            #[inline]
            fn key_hash(&self) -> u64 {
                #body
            }
        }
    })
}
